package web

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/mermaid"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/replay"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// runsLimit is how many runs a page lists, newest first.
const runsLimit = 200

var funcs = template.FuncMap{
	"short": func(id events.ID) string {
		s := id.String()
		if len(s) > 10 {
			return s[len(s)-10:]
		}
		return s
	},
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format("15:04:05.000")
	},
	"date": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.Local().Format("2006-01-02 15:04:05")
	},
	"ms":    func(f float64) string { return fmt.Sprintf("%.1f", f) },
	"lines": func(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") },
	"diffClass": func(line string) string {
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			return "file"
		case strings.HasPrefix(line, "@@"):
			return "hunk"
		case strings.HasPrefix(line, "+"):
			return "add"
		case strings.HasPrefix(line, "-"):
			return "del"
		}
		return "ctx"
	},
	"add": func(a, b int) int { return a + b },
	// transport names how a session reached the bridge as its client was
	// configured: stdio (a pipe) or HTTP (the front door, over TCP).
	"transport": func(t string) string {
		switch t {
		case "pipe":
			return "stdio"
		case "tcp":
			return "HTTP"
		}
		return t
	},
}

var pages = func() map[string]*template.Template {
	out := map[string]*template.Template{}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, n := range names {
		if n == "templates/base.html" {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		out[name] = template.Must(template.New("base.html").Funcs(funcs).ParseFS(templateFS, "templates/base.html", n))
	}
	return out
}()

func assetHandler() http.Handler {
	sub, err := fs.Sub(assetFS, "assets")
	if err != nil {
		panic(err)
	}
	files := http.StripPrefix("/assets/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Files only: a directory would be answered with a listing.
		name := strings.TrimPrefix(r.URL.Path, "/assets/")
		if fi, err := fs.Stat(sub, strings.TrimSuffix(name, "/")); name == "" || err != nil || fi.IsDir() {
			http.NotFound(w, r)
			return
		}
		files.ServeHTTP(w, r)
	})
}

// page is what every template gets.
type page struct {
	Title string
	Nav   string
	CSRF  string
	// Who is signed in ([auth]): their name and role; empty for the
	// machine's own user (the launch link).
	Who, Role string
	Version   string
	Diagram   bool // load Mermaid
	Error     string
	Data      any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, p page) {
	p.CSRF = s.csrfToken(sessionOf(r))
	if sess := s.userOf(r); !sess.user.IsZero() {
		p.Who, p.Role = sess.user.Display(), sess.role
	}
	p.Version = s.opts.Version
	var buf bytes.Buffer
	if err := pages[name].Execute(&buf, p); err != nil {
		s.opts.Logger.Error("ui: template", "page", name, "err", err)
		http.Error(w, "the page could not be rendered: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(buf.Bytes())
}

// runsFilter is the runs page's query.
type runsFilter struct {
	Status, Tool, Session, Text, Kind string
}

func filterOf(r *http.Request) (runsFilter, projections.Query, error) {
	v := r.URL.Query()
	f := runsFilter{Status: v.Get("status"), Tool: strings.TrimSpace(v.Get("tool")),
		Session: strings.TrimSpace(v.Get("session")), Text: strings.TrimSpace(v.Get("q")), Kind: v.Get("kind")}
	q := projections.Query{View: projections.ViewRuns, Status: f.Status, Tool: f.Tool, Text: f.Text, Limit: runsLimit}
	switch f.Kind {
	case "", projections.KindMCP: // AI clients' requests unless asked
		f.Kind, q.Kind = projections.KindMCP, projections.KindMCP
	case projections.KindOther:
		q.Kind = f.Kind
	case "all":
	default:
		return f, q, fmt.Errorf("kind %q: want mcp, other or all", f.Kind)
	}
	switch f.Status {
	case "", replay.StatusOK, replay.StatusFailed, replay.StatusDenied, replay.StatusIncomplete:
	default:
		return f, q, fmt.Errorf("status %q: want ok, failed, denied or incomplete", f.Status)
	}
	if f.Session != "" {
		id, err := events.ParseID(f.Session)
		if err != nil {
			return f, q, fmt.Errorf("session: %v", err)
		}
		q.Session = id
	}
	return f, q, nil
}

type runsData struct {
	Filter runsFilter
	Runs   []replay.Summary
	Limit  int
}

func (s *Server) loadRuns(r *http.Request) (runsData, error) {
	f, q, err := filterOf(r)
	d := runsData{Filter: f, Limit: runsLimit}
	if err != nil {
		return d, err
	}
	rows, err := s.opts.Log.View(r.Context(), q)
	if err != nil {
		return d, err
	}
	d.Runs = make([]replay.Summary, len(rows))
	for i, row := range rows {
		if err := json.Unmarshal(row, &d.Runs[i]); err != nil {
			return d, err
		}
	}
	return d, nil
}

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.loadRuns(r)
	p := page{Title: "Runs", Nav: "runs", Data: d}
	if err != nil {
		p.Error = err.Error()
	}
	s.render(w, r, "runs", p)
}

// runsRows is the runs table's body alone, which the page fetches again
// when the event stream says something was committed.
func (s *Server) runsRows(w http.ResponseWriter, r *http.Request) {
	d, err := s.loadRuns(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := pages["runs"].ExecuteTemplate(w, "rows", d); err != nil {
		s.opts.Logger.Error("ui: rows", "err", err)
	}
}

type runData struct {
	Run     replay.Run
	Diagram string
	Audit   string // the executor.audit envelope, indented JSON
	Bounds  []boundaryTime
	Bars    []bar // the waterfall
	Raw     string
	Start   time.Time
	Offsets []float64
}

// bar is a span of the waterfall, placed on a 1000-wide axis.
type bar struct {
	replay.Span
	X, W float64
}

// waterfall places a run's spans on a 1000-wide axis: the run's length.
func waterfall(spans []replay.Span) []bar {
	total := 0.0
	for _, s := range spans {
		total = max(total, s.End())
	}
	var out []bar
	for _, s := range spans {
		b := bar{Span: s, W: 1000}
		if total > 0 {
			b.X, b.W = s.StartMs/total*1000, max(s.Ms/total*1000, 2)
		}
		out = append(out, b)
	}
	return out
}

type boundaryTime struct {
	Boundary string
	Ms       float64
}

func (s *Server) loadRun(ctx context.Context, idText string) (replay.Run, error) {
	id, err := events.ParseID(idText)
	if err != nil {
		return replay.Run{}, fmt.Errorf("not a request id: %v", err)
	}
	evs, err := s.opts.Log.ByRequest(ctx, id)
	if err != nil {
		return replay.Run{}, err
	}
	if len(evs) == 0 {
		return replay.Run{}, errNotFound
	}
	// An approval's arguments whole, as the approvals page shows them.
	if pr, ok := s.opts.Log.(events.PayloadReader); ok {
		for i, e := range evs {
			if e.Kind == events.KindApprovalRequested {
				if whole, err := events.ResolveValue(ctx, pr, e.Attrs.Get("args")); err == nil {
					evs[i].Attrs = e.Attrs.With("args", whole)
				}
			}
		}
	}
	return replay.Judge(id, evs), nil
}

var errNotFound = errors.New("no run has this request id")

// indentJSON indents a JSON text; anything else is returned as it is.
func indentJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	run, err := s.loadRun(r.Context(), r.PathValue("id"))
	if err != nil {
		w.WriteHeader(http.StatusNotFound)
		s.render(w, r, "run", page{Title: "Run", Nav: "runs", Error: err.Error()})
		return
	}
	d := runData{Run: run, Diagram: mermaid.Sequence(run.Events, mermaid.Options{Timings: true}), Bars: waterfall(run.Spans)}
	for b, ms := range run.Durations {
		d.Bounds = append(d.Bounds, boundaryTime{b, ms})
	}
	sort.Slice(d.Bounds, func(i, j int) bool { return d.Bounds[i].Ms > d.Bounds[j].Ms })
	for _, e := range run.Events {
		if d.Start.IsZero() {
			d.Start = e.Time
		}
		d.Offsets = append(d.Offsets, events.Ms(e.Time.Sub(d.Start)))
		if e.Kind == events.KindExecutorAudit {
			d.Audit = indentJSON(e.Attrs.Get(events.AttrEnvelope))
		}
	}
	raw, _ := json.MarshalIndent(run.Events, "", "  ")
	d.Raw = string(raw)
	s.render(w, r, "run", page{Title: "Run " + run.RequestID.String(), Nav: "runs", Diagram: true, Data: d})
}

type sessionsData struct {
	Sessions []projections.Session
	Export   bool // each can be downloaded as a recorded-session file
	// Hidden counts the sessions no MCP client opened (synthetic load, the
	// demo's burst) left out of the list; All shows them.
	Hidden int
	All    bool
}

func (s *Server) sessionsPage(w http.ResponseWriter, r *http.Request) {
	// The real sessions first: synthetic ones are left out before the
	// limit, unless asked for (?all=1), so a burst never hides a client's.
	all := r.URL.Query().Get("all") != ""
	rows, err := s.opts.Log.View(r.Context(), projections.Query{View: projections.ViewSessions, Limit: 1 << 20})
	p := page{Title: "Sessions", Nav: "sessions"}
	d := sessionsData{Export: s.opts.ExportSession != nil, All: all}
	for _, row := range rows {
		var ss projections.Session
		switch {
		case json.Unmarshal(row, &ss) != nil:
		case ss.Synthetic() && !all:
			d.Hidden++
		case len(d.Sessions) < runsLimit:
			d.Sessions = append(d.Sessions, ss)
		}
	}
	if err != nil {
		p.Error = err.Error()
	}
	p.Data = d
	s.render(w, r, "sessions", p)
}

// sessionExport answers with session id as a recorded-session file, to be
// saved (`tracebridge session replay FILE` re-drives it).
func (s *Server) sessionExport(w http.ResponseWriter, r *http.Request) {
	id, err := events.ParseID(r.PathValue("id"))
	if err != nil || s.opts.ExportSession == nil {
		http.NotFound(w, r)
		return
	}
	var buf bytes.Buffer
	if err := s.opts.ExportSession(r.Context(), id, &buf); err != nil {
		// Not a server fault: this session's evidence cannot make a file
		// here. Say why and what does it.
		w.WriteHeader(http.StatusUnprocessableEntity)
		s.render(w, r, "sessions", page{Title: "Sessions", Nav: "sessions", Data: sessionsData{},
			Error: "Session " + id.String() + " cannot be exported from here: " + err.Error() +
				". From a shell: tracebridge session export " + id.String() + " --config FILE (the tracebridge.toml it ran with) -o FILE"})
		return
	}
	w.Header().Set("Content-Type", "application/jsonl")
	w.Header().Set("Content-Disposition", `attachment; filename="session-`+strings.ToLower(id.String())+`.jsonl"`)
	w.Header().Set("Cache-Control", "no-store")
	w.Write(buf.Bytes())
}

// maxSessionEvents caps the diagram of one session.
const maxSessionEvents = 5000

type sessionData struct {
	ID        events.ID
	Diagram   string
	Events    int
	Truncated bool
	Runs      []replay.Summary
}

func (s *Server) sessionPage(w http.ResponseWriter, r *http.Request) {
	p := page{Title: "Session", Nav: "sessions", Diagram: true}
	id, err := events.ParseID(r.PathValue("id"))
	if err != nil {
		p.Error = "not a session id: " + err.Error()
		w.WriteHeader(http.StatusNotFound)
		s.render(w, r, "session", p)
		return
	}
	evs, err := sessionEvents(r.Context(), s.opts.Log, id, maxSessionEvents+1)
	if err != nil {
		p.Error = err.Error()
	}
	d := sessionData{ID: id, Events: len(evs)}
	if len(evs) > maxSessionEvents {
		evs, d.Truncated = evs[:maxSessionEvents], true
	}
	d.Diagram = mermaid.Sequence(evs, mermaid.Options{})
	rows, _ := s.opts.Log.View(r.Context(), projections.Query{View: projections.ViewRuns, Session: id, Limit: runsLimit})
	for _, row := range rows {
		var sum replay.Summary
		if json.Unmarshal(row, &sum) == nil {
			d.Runs = append(d.Runs, sum)
		}
	}
	p.Title, p.Data = "Session "+id.String(), d
	s.render(w, r, "session", p)
}

// sessionEvents is what a session's diagram draws: the events of the
// session and every event of its requests, which carry the request but not
// the session (the upstream hops, an operator's decision), in seq order,
// at most limit.
func sessionEvents(ctx context.Context, log Log, id events.ID, limit int) ([]events.Event, error) {
	evs, err := log.BySession(ctx, id, 0, limit)
	if err != nil {
		return nil, err
	}
	bySeq := map[uint64]bool{}
	var reqs []events.ID
	seen := map[events.ID]bool{}
	for _, e := range evs {
		bySeq[e.Seq] = true
		if !e.RequestID.IsZero() && !seen[e.RequestID] {
			seen[e.RequestID] = true
			reqs = append(reqs, e.RequestID)
		}
	}
	for _, req := range reqs {
		if len(evs) >= limit {
			break
		}
		more, err := log.ByRequest(ctx, req)
		if err != nil {
			return evs, err
		}
		for _, e := range more {
			if !bySeq[e.Seq] {
				bySeq[e.Seq] = true
				evs = append(evs, e)
			}
		}
	}
	slices.SortFunc(evs, func(a, b events.Event) int { return cmp.Compare(a.Seq, b.Seq) })
	return evs[:min(len(evs), limit)], nil
}

type reviewsData struct {
	Versions  []host.ReviewSummary
	Shown     *host.ReviewVersion
	HTML      template.HTML
	Commit    string
	HostError string
	Flash     string
}

func (s *Server) reviewsPage(w http.ResponseWriter, r *http.Request) {
	p := page{Title: "Review", Nav: "reviews"}
	d := reviewsData{Flash: r.URL.Query().Get("done")}
	var err error
	if d.Versions, err = s.host.Reviews(r.Context()); err != nil {
		d.HostError = err.Error()
	}
	if len(d.Versions) > 0 {
		n, _ := strconv.Atoi(r.URL.Query().Get("v")) // absent or not a number: the newest
		shown, err := s.host.Review(r.Context(), n)
		if err != nil && n != 0 {
			p.Error = err.Error()
			shown, err = s.host.Review(r.Context(), 0)
		}
		if err != nil {
			d.HostError = err.Error()
		} else {
			d.Shown = &shown
			d.HTML = renderReview(shown.Content, shown.Refs)
			d.Commit = commitMessage(shown.Content)
		}
	}
	p.Data = d
	s.render(w, r, "reviews", p)
}

type workspaceData struct {
	Tree      host.Tree
	File      *host.FileView
	Lines     []string
	HostError string
}

func (s *Server) workspacePage(w http.ResponseWriter, r *http.Request) {
	p := page{Title: "Workspace", Nav: "workspace"}
	var d workspaceData
	var err error
	if d.Tree, err = s.host.Tree(r.Context()); err != nil {
		d.HostError = err.Error()
	}
	if f := r.URL.Query().Get("file"); f != "" && d.HostError == "" {
		v, err := s.host.File(r.Context(), f)
		if err != nil {
			p.Error = err.Error()
		} else {
			d.File, d.Lines = &v, strings.Split(v.Content, "\n")
			if n := len(d.Lines); n > 1 && d.Lines[n-1] == "" {
				d.Lines = d.Lines[:n-1]
			}
			p.Title = v.Path
		}
	}
	p.Data = d
	s.render(w, r, "workspace", p)
}
