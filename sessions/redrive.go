package sessions

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracebridge/tracebridge/bridge"
	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/replay"
)

// Log is the re-drive's own, fresh event log (a hub on a temporary data
// dir).
type Log interface {
	Append(ctx context.Context, evs []events.Event) ([]uint64, error)
	Head(ctx context.Context) (uint64, events.Hash, error)
	Range(ctx context.Context, from uint64, limit int) ([]events.Event, uint64, error)
	ByRequest(ctx context.Context, id events.ID) ([]events.Event, error)
	View(ctx context.Context, q projections.Query) ([]json.RawMessage, error)
	events.PayloadStore // answers and results are kept whole, as in the recording
	events.PayloadReader
}

// RedriveOptions configures a re-drive.
type RedriveOptions struct {
	// Log is a fresh log for the re-drive's evidence; its clock should be
	// Clock(s).
	Log Log
	// PipePath is where the recorded host listens.
	PipePath string
	// Extra tools join the re-driven bridge's catalog as they joined the
	// recorded one's (a test build's misbehaving tools).
	Extra   []*executor.Tool
	Version string // the bridge's, as initialize reports it
	Logger  *slog.Logger
	// StepTimeout bounds the wait for one answer. Zero: 60s.
	StepTimeout time.Duration
}

// Redriven is the outcome of a re-drive.
type Redriven struct {
	Runs  []replay.Run // one per client and operator step, in step order
	Steps []int        // the step index of each run
	Drift []Drift      // empty: the session behaves as recorded

	// scrub puts the recording's pipe path back where an answer names
	// the re-drive's.
	scrub func(string) string
}

// Drift is one difference between the recording and the re-drive.
type Drift struct {
	Run   int    // 1-based among the re-driven runs: the number in the run's triad name
	Step  int    // index in the session's steps
	Label string // the step, as a person names it
	Event int    // 1-based position among the step's in-scope events; 0: the whole step
	At    string // where the client's answer differs (a JSON path); "": not the answer
	Want  string
	Got   string
}

func (d Drift) String() string {
	if d.Step < 0 {
		return d.Label + ": " + d.Got
	}
	if d.Run == 0 { // an upstream request, not a run
		return fmt.Sprintf("%s (line %d of the file): the bridge would send the upstream another request:\n    expected %s\n    got      %s", d.Label, d.Step+2, d.Want, d.Got)
	}
	if d.At != "" {
		return fmt.Sprintf("run %02d (%s, line %d of the file): the client's answer differs at %s:\n    expected %s\n    got      %s", d.Run, d.Label, d.Step+2, d.At, d.Want, d.Got)
	}
	if d.Event == 0 {
		return fmt.Sprintf("run %02d (%s, line %d of the file): %s", d.Run, d.Label, d.Step+2, d.Got)
	}
	return fmt.Sprintf("run %02d (%s, line %d of the file), event %d:\n    expected %s\n    got      %s", d.Run, d.Label, d.Step+2, d.Event, orNone(d.Want), orNone(d.Got))
}

// Label names a step for a person: the method and tool, or the command.
func (st *Step) Label() string {
	switch st.Step {
	case StepClient, StepNotify:
		var p struct {
			Name string `json:"name"`
		}
		json.Unmarshal(st.Params, &p)
		if p.Name != "" {
			return st.Method + " " + p.Name
		}
		return st.Method
	}
	return st.Step + " " + st.Command
}

// Redrive runs s against the current build: the client's messages go to a
// real bridge in this process, the recorded answers come from a real pipe
// server, ids and the clock are deterministic, and the evidence is compared
// with the recording.
func Redrive(ctx context.Context, s *Session, opts RedriveOptions) (*Redriven, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = 60 * time.Second
	}
	cfg := config.Default()
	if s.Header.Config != "" {
		var err error
		if cfg, err = config.Parse("session "+s.Header.Name+" config", []byte(s.Header.Config)); err != nil {
			return nil, err
		}
	}
	cfg = cassetteConfig(cfg)
	d := &redrive{s: s, opts: opts, node: opts.Log, now: Clock(s), secrets: &recordedSecrets{}, client: newRecordedClient(s),
		redriven: map[string]string{}, served: make(chan error, 1)}
	seed := sha256.Sum256([]byte("tracebridge session " + s.Header.Name))
	d.em = events.NewEmitter(d.node, events.EmitterOptions{
		Redactor: events.NewRedactor(seed[:]), IDs: events.NewIDSource(d.now, rand.NewChaCha8(seed)), Now: d.now, Logger: opts.Logger, Payloads: d.node})
	defer d.em.Close(context.Background())

	var hosts []host.Entry
	if s.Header.Host {
		var stop func()
		var err error
		if hosts, stop, err = recordedHosts(ctx, s, opts, d.em); err != nil {
			return nil, err
		}
		defer stop()
	}
	upstreams := NewRecordedUpstreams(s)
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	closeBridge, err := d.startBridge(bctx, cfg, hosts, upstreams)
	if err != nil {
		return nil, err
	}
	defer closeBridge()
	d.operator = pipe.NewClient(pipe.ClientOptions{Path: opts.PipePath, Recorder: d.em, Logger: opts.Logger, Timeout: opts.StepTimeout})
	defer d.operator.Close()
	for i := range s.Steps {
		if err := d.step(ctx, i); err != nil {
			return nil, err
		}
	}
	if err := d.end(ctx); err != nil {
		return nil, err
	}
	scrub := func(v string) string { return v }
	if s.Header.Pipe != "" {
		scrub = strings.NewReplacer(opts.PipePath, s.Header.Pipe).Replace
	}
	res, err := collect(ctx, s, d.node, d.stepOf, d.operatorReqs, scrub)
	if err != nil {
		return nil, err
	}
	res.Drift = append(res.Drift, upstreams.Drift()...)
	res.scrub = scrub
	return res, nil
}

// redrive is one re-drive in progress: the bridge on its stdio, the
// recording's stand-ins, and which step each re-driven run belongs to.
type redrive struct {
	s       *Session
	opts    RedriveOptions
	node    Log
	em      *events.Emitter
	now     func() time.Time
	secrets *recordedSecrets
	client  *recordedClient

	pipeW    io.Closer
	inW      *lockedWriter // the steps and the answers to the bridge's own requests share it
	answers  *answerBox
	served   chan error // the bridge's end
	operator *pipe.Client

	stepOf       []int
	operatorReqs []events.ID
	redriven     map[string]string // recorded request id → the re-drive's
	nextID       int
}

// startBridge runs the bridge `tracebridge mcp` runs, on the re-drive's
// stdio and evidence, with the recording standing in for the environment
// and the disk: secrets resolve as recorded (never from the environment or
// a file), approval deadlines fire as recorded, upstreams are the recorded
// ones, discovered tools their recorded stand-ins, and the workspace hosts
// the recorded ones.
func (d *redrive) startBridge(ctx context.Context, cfg *config.Config, hosts []host.Entry, upstreams *RecordedUpstreams) (func(), error) {
	b, err := bridge.New(bridge.Parts{Config: cfg, ConfigText: d.s.Header.Config, Emitter: d.em, Log: d.node, Host: redriveHost(d.opts, cfg, d.em, hosts),
		Getenv: d.secrets.Getenv, ReadFile: d.secrets.ReadFile, After: d.secrets.After, Now: d.now, Logger: d.opts.Logger, Version: d.opts.Version,
		Dial: upstreams.Dial, Extra: append(RecordedTools(d.s), d.opts.Extra...)})
	if err != nil {
		return nil, err
	}
	inR, pipeW := io.Pipe()
	outR, outW := io.Pipe()
	d.pipeW, d.inW = pipeW, &lockedWriter{w: pipeW}
	go func() {
		err := b.Server.Serve(ctx, inR, outW)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		d.served <- err
		outW.Close()
	}()
	d.answers = readAnswers(outR, d.inW, d.client)
	return b.Close, nil
}

// step re-drives step i: a client message, a notification or an
// operator's pipe request.
func (d *redrive) step(ctx context.Context, i int) error {
	st := &d.s.Steps[i]
	switch st.Step {
	case StepClient:
		if err := d.clientStep(ctx, i, st); err != nil {
			return err
		}
		d.stepOf = append(d.stepOf, i)
	case StepNotify:
		if err := writeMessage(d.inW, 0, st); err != nil {
			return fmt.Errorf("step %d: the bridge stopped reading: %w", i+1, err)
		}
	case StepOperator:
		req := d.em.NewID()
		d.operator.Call(ctx, pipe.Request{Command: st.Command, RequestID: req.String(), OperationID: d.em.NewID().String(), Payload: st.Payload})
		if err := d.em.Flush(ctx, req); err != nil {
			return err
		}
		d.operatorReqs = append(d.operatorReqs, req)
		d.stepOf = append(d.stepOf, i)
	}
	return nil
}

// clientStep sends a client request and waits for its answer, giving the
// recorded operator decisions meanwhile.
func (d *redrive) clientStep(ctx context.Context, i int, st *Step) error {
	d.secrets.step.Store(st)
	if len(st.Roots) > 0 {
		d.client.roots.Store(&st.Roots)
	}
	d.nextID++
	stopDeciding := decide(ctx, st, d.node, d.em, d.now)
	defer stopDeciding()
	if err := writeMessage(d.inW, d.nextID, withRequestIDs(st, d.redriven)); err != nil {
		return fmt.Errorf("step %d: the bridge stopped reading: %w", i+1, err)
	}
	select {
	case <-d.answers.wait(d.nextID):
		if !st.RequestID.IsZero() {
			d.redriven[st.RequestID.String()] = d.answers.requestID(d.nextID)
		}
		return nil
	case err := <-d.served:
		return fmt.Errorf("step %d (%s): the bridge exited: %v", i+1, st.Label(), err)
	case <-time.After(d.opts.StepTimeout):
		return fmt.Errorf("step %d (%s): no answer within %v", i+1, st.Label(), d.opts.StepTimeout)
	}
}

// end closes the bridge's stdin, waits for its session to end and makes
// the evidence durable.
func (d *redrive) end(ctx context.Context) error {
	d.pipeW.Close()
	select {
	case err := <-d.served:
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("the bridge failed: %w", err)
		}
	case <-time.After(d.opts.StepTimeout):
		return errors.New("the bridge did not end its session after stdin closed")
	}
	return d.em.FlushAll(ctx)
}

// Clock is a re-drive's clock: it stands still at the recording's start,
// so times, durations and ids come out the same on every re-drive.
func Clock(s *Session) func() time.Time {
	at := s.Header.Recorded
	if at.IsZero() {
		at = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return func() time.Time { return at }
}

// collect gathers each step's run from the re-drive's log and compares it
// with the recording.
// Answers name the re-drive's pipe path where the recording's named its
// own: scrub puts the recorded one back.
func collect(ctx context.Context, s *Session, node Log, stepOf []int, operatorReqs []events.ID, scrub func(string) string) (*Redriven, error) {
	head, _, err := node.Head(ctx)
	if err != nil {
		return nil, err
	}
	var clientReqs []events.ID
	for from := uint64(1); from <= head; {
		evs, next, err := node.Range(ctx, from, 2048)
		if err != nil {
			return nil, err
		}
		for i := range evs {
			if evs[i].Kind == events.KindMCPRequestReceived {
				clientReqs = append(clientReqs, evs[i].RequestID)
			}
		}
		if len(evs) == 0 {
			break
		}
		from = next
	}
	out := &Redriven{Steps: stepOf}
	ci, oi := 0, 0
	for k, idx := range stepOf {
		st := &s.Steps[idx]
		var req events.ID
		switch {
		case st.Step == StepClient && ci < len(clientReqs):
			req = clientReqs[ci]
			ci++
		case st.Step == StepOperator && oi < len(operatorReqs):
			req = operatorReqs[oi]
			oi++
		default:
			out.Drift = append(out.Drift, Drift{Run: k + 1, Step: idx, Label: st.Label(), Got: "no request was recorded for this step"})
			continue
		}
		evs, err := node.ByRequest(ctx, req)
		if err != nil {
			return nil, err
		}
		run := replay.Judge(req, evs)
		out.Runs = append(out.Runs, run)
		drift := compare(idx, st, evs)
		if d, err := compareReply(ctx, node, idx, st, evs, scrub); err != nil {
			return nil, err
		} else if d != nil {
			drift = append(drift, *d)
		}
		for _, d := range drift {
			d.Run = k + 1
			out.Drift = append(out.Drift, d)
		}
	}
	return out, nil
}

// compare lists where the re-driven crossings of a step differ from the
// recorded ones. The host's events and the rest are compared as two
// streams: in a recording they come from two processes whose order in the
// log is not causal, in a re-drive from one.
func compare(idx int, st *Step, evs []events.Event) []Drift {
	got := Crossings(evs)
	var out []Drift
	for _, host := range []bool{false, true} {
		want, have := side(st.Expect, host), side(got, host)
		for i := 0; i < max(len(want), len(have)); i++ {
			var w, h string
			if i < len(want) {
				w = want[i].c.String()
			}
			if i < len(have) {
				h = have[i].c.String()
			}
			if w == h {
				continue
			}
			pos := len(got) + 1
			if i < len(have) {
				pos = have[i].pos
			} else if i < len(want) {
				pos = want[i].pos
			}
			out = append(out, Drift{Step: idx, Label: st.Label(), Event: pos, Want: w, Got: h})
			if len(want) != len(have) {
				out = append(out, Drift{Step: idx, Label: st.Label(), Got: fmt.Sprintf("%d %s events, the recording has %d", len(have), sideName(host), len(want))})
			}
			break
		}
	}
	return out
}

// compareReply compares the client's answer in the re-drive with the
// recorded one (steps recorded with their answer).
func compareReply(ctx context.Context, node Log, idx int, st *Step, evs []events.Event, scrub func(string) string) (*Drift, error) {
	if len(st.Reply) == 0 {
		return nil, nil
	}
	got, err := Reply(ctx, node, evs)
	if err != nil {
		return nil, err
	}
	at, w, g := answerDiff(string(st.Reply), scrub(string(got)))
	if at == "" {
		return nil, nil
	}
	return &Drift{Step: idx, Label: st.Label(), At: at, Want: w, Got: g}, nil
}

// Reply is the answer a run's client got, whole (nil: none recorded).
func Reply(ctx context.Context, r events.PayloadReader, evs []events.Event) (json.RawMessage, error) {
	for i := range evs {
		if evs[i].Kind == events.KindMCPResponseSent {
			a, err := events.ResolveValue(ctx, r, evs[i].Attrs.Get(events.AttrAnswer))
			if err != nil || !json.Valid([]byte(a)) {
				return nil, err
			}
			return json.RawMessage(a), nil
		}
	}
	return nil, nil
}

type placed struct {
	c   Crossing
	pos int // 1-based among all the step's crossings
}

// side returns the host's crossings, or everyone else's.
func side(cs []Crossing, host bool) []placed {
	var out []placed
	for i, c := range cs {
		if (c.Boundary == events.BoundaryHost) == host {
			out = append(out, placed{c, i + 1})
		}
	}
	return out
}

func sideName(host bool) string {
	if host {
		return "host-side"
	}
	return "bridge-side"
}

// Crossings returns the in-scope crossings of a run, for --update.
func Crossings(evs []events.Event) []Crossing {
	var out []Crossing
	for i := range evs {
		if InScopeEvent(&evs[i]) {
			out = append(out, CrossingOf(&evs[i]))
		}
	}
	return out
}

// recordedHosts serves the session's host answers on real pipe servers:
// each command gets its recorded answers in order, from the host of the
// root that gave them. Answers of no chosen root come from the host at
// PipePath; each root the bridge chose among several gets its own socket
// beside it, returned for the bridge to choose among again.
func recordedHosts(ctx context.Context, s *Session, opts RedriveOptions, em *events.Emitter) ([]host.Entry, func(), error) {
	var mu sync.Mutex
	queues := map[string]map[string][]*pipe.Answer{} // root → command → answers
	var roots []string
	for i := range s.Steps {
		if st := &s.Steps[i]; st.Step == StepHost {
			if queues[st.Root] == nil {
				queues[st.Root] = map[string][]*pipe.Answer{}
				if st.Root != "" {
					roots = append(roots, st.Root)
				}
			}
			queues[st.Root][st.Command] = append(queues[st.Root][st.Command], st.Answer)
		}
	}
	sort.Strings(roots)
	if err := os.MkdirAll(filepath.Dir(opts.PipePath), 0o700); err != nil {
		return nil, nil, err
	}
	var hosts []host.Entry
	var stops []func()
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
	}
	for i, root := range append([]string{""}, roots...) {
		queue := queues[root]
		path := opts.PipePath
		if root != "" {
			path = filepath.Join(filepath.Dir(opts.PipePath), fmt.Sprintf("host-%d.sock", i))
			hosts = append(hosts, host.Entry{Root: root, Socket: path})
		}
		handlers := map[string]pipe.Handler{}
		for cmd := range queue {
			handlers[cmd] = func(context.Context, pipe.Request) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				if len(queue[cmd]) == 0 {
					return nil, &events.Err{Code: events.CodeToolError, Msg: "the recording has no more answers for " + cmd}
				}
				a := queue[cmd][0]
				queue[cmd] = queue[cmd][1:]
				if !a.OK {
					return nil, &events.Err{Code: a.Code, Msg: a.Message}
				}
				return a.Payload, nil
			}
		}
		l, err := pipe.Listen(path)
		if err != nil {
			stopAll()
			return nil, nil, fmt.Errorf("recorded host: %w", err)
		}
		hctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			pipe.NewServer(pipe.ServerOptions{Handlers: handlers, Recorder: em, Logger: opts.Logger}).Serve(hctx, l)
		}()
		stops = append(stops, func() { cancel(); l.Close(); <-done })
	}
	return hosts, stopAll, nil
}

// recordedClient answers what the bridge asks the client as the client
// answered in the recording: its roots as it gave them in the step being
// re-driven (none before any), and the upstreams' sampling and
// elicitation requests the bridge relays, each method's answers in order.
type recordedClient struct {
	roots   atomic.Pointer[json.RawMessage]
	mu      sync.Mutex
	relayed map[string][]json.RawMessage
}

func newRecordedClient(s *Session) *recordedClient {
	c := &recordedClient{relayed: map[string][]json.RawMessage{}}
	for _, st := range s.Steps {
		for _, a := range st.Asks {
			if !a.Bridge {
				c.relayed[a.Method] = append(c.relayed[a.Method], a.Answer)
			}
		}
	}
	return c
}

// next is the client's next recorded answer to a relayed method, whole
// ({"result": …} or {"error": …}); nil: none left.
func (c *recordedClient) next(method string) json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.relayed[method]
	if len(q) == 0 {
		return nil
	}
	c.relayed[method] = q[1:]
	return q[0]
}

// writeMessage sends one JSON-RPC line: a request when id > 0, else a
// notification.
func writeMessage(w io.Writer, id int, st *Step) error {
	msg := map[string]any{"jsonrpc": "2.0", "method": st.Method}
	if id > 0 {
		msg["id"] = id
	}
	if len(st.Params) > 0 {
		msg["params"] = st.Params
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// answerBox hands the bridge's responses to the steps waiting for them.
type answerBox struct {
	mu      sync.Mutex
	waiting map[int]chan struct{}
	reqs    map[int]string // JSON-RPC id → the result's _meta request id
}

// requestID is the request id the answer to JSON-RPC id id named.
func (a *answerBox) requestID(id int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reqs[id]
}

func (a *answerBox) wait(id int) <-chan struct{} { return a.box(id) }

func (a *answerBox) box(id int) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch, ok := a.waiting[id]
	if !ok {
		ch = make(chan struct{})
		a.waiting[id] = ch
	}
	return ch
}

func readAnswers(r io.Reader, w io.Writer, client *recordedClient) *answerBox {
	a := &answerBox{waiting: map[int]chan struct{}{}, reqs: map[int]string{}}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), MaxSessionLine)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result struct {
					Meta map[string]any `json:"_meta"`
				} `json:"result"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || len(m.ID) == 0 {
				continue // a notification
			}
			if m.Method != "" { // the bridge asks the client (its ids are the bridge's own)
				answerBridge(w, m.ID, m.Method, client)
				continue
			}
			var id int
			if json.Unmarshal(m.ID, &id) != nil {
				continue
			}
			ch := a.box(id)
			a.mu.Lock()
			if req, ok := m.Result.Meta["tracebridge/requestId"].(string); ok {
				a.reqs[id] = req
			}
			select {
			case <-ch:
			default:
				close(ch)
			}
			a.mu.Unlock()
		}
		io.Copy(io.Discard, r)
	}()
	return a
}

// answerBridge answers a request the bridge sends the client at once, as
// the client answered in the recording: roots/list with the step's roots
// (none when it was not asked), a relayed request with the next recorded
// answer to its method, anything else with an error. Unanswered, each
// upstream link waited a second for the client's roots.
func answerBridge(w io.Writer, id json.RawMessage, method string, client *recordedClient) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	switch a := client.roots.Load(); {
	case method == "roots/list" && a != nil && json.Valid(*a) && (*a)[0] == '"':
		var failed string
		json.Unmarshal(*a, &failed)
		msg["error"] = map[string]any{"code": -32603, "message": failed}
	case method == "roots/list":
		list := []any{}
		var uris []string
		if a != nil {
			json.Unmarshal(*a, &uris)
		}
		for _, u := range uris {
			list = append(list, map[string]string{"uri": u})
		}
		msg["result"] = map[string]any{"roots": list}
	default:
		var ans map[string]json.RawMessage
		if json.Unmarshal(client.next(method), &ans) != nil || (ans["result"] == nil && ans["error"] == nil) {
			ans = map[string]json.RawMessage{"error": json.RawMessage(`{"code":-32601,"message":"the recording holds no more answers of the client to ` + method + `"}`)}
		}
		for k, v := range ans {
			msg[k] = v
		}
	}
	b, _ := json.Marshal(msg)
	w.Write(append(b, '\n'))
}

// lockedWriter serialises whole lines from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// withRequestIDs is st with every recorded request id its params name
// replaced by the re-drive's id of the same step (trace_replay of an
// earlier call names that call's id).
func withRequestIDs(st *Step, redriven map[string]string) *Step {
	if len(redriven) == 0 || len(st.Params) == 0 {
		return st
	}
	params := string(st.Params)
	for rec, now := range redriven {
		if now != "" {
			params = strings.ReplaceAll(params, rec, now)
		}
	}
	out := *st
	out.Params = json.RawMessage(params)
	return &out
}

// decide gives a step's recorded operator decisions again: each approval
// prompt the step raises in the re-drive is answered, in order, with the
// decision the operator gave in the recording. It stops when the returned
// func is called.
func decide(ctx context.Context, st *Step, log Log, em *events.Emitter, now func() time.Time) func() {
	if len(st.Decisions) == 0 {
		return func() {}
	}
	dctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		answered := map[string]bool{}
		next := 0
		for next < len(st.Decisions) {
			pending, _ := projections.PendingApprovals(dctx, log, now())
			for _, p := range pending {
				if answered[p.ID] || next >= len(st.Decisions) {
					continue
				}
				d := st.Decisions[next]
				next++
				answered[p.ID] = true
				em.Emit(projections.Decision(p, d.Decision, d.By, d.Reason, time.Time{})) // no wait: the triads carry no operator clock
				em.Flush(dctx, p.RequestID)
			}
			select {
			case <-dctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// orNone is s, or "-" when it is empty: how a missing value reads in a
// drift line.
func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Accept makes what the re-drive saw the recording: each re-driven step
// expects the run's crossings and, for a client step, the client's answer.
func (r *Redriven) Accept(ctx context.Context, log events.PayloadReader, s *Session) error {
	for k, run := range r.Runs {
		st := &s.Steps[r.Steps[k]]
		st.Expect = Crossings(run.Events)
		if st.Step == StepClient {
			reply, err := Reply(ctx, log, run.Events)
			if err != nil {
				return err
			}
			if r.scrub != nil {
				reply = json.RawMessage(r.scrub(string(reply)))
			}
			st.Reply = reply
		}
	}
	return nil
}

// redriveHost is the re-driven bridge's way to the recorded hosts: the one
// at opts.PipePath, or a router choosing among several by the client's
// recorded roots.
func redriveHost(opts RedriveOptions, cfg *config.Config, em *events.Emitter, hosts []host.Entry) bridge.Host {
	copts := pipe.ClientOptions{Path: opts.PipePath, Recorder: em, Timeout: cfg.PipeTimeout(), Logger: opts.Logger}
	if len(hosts) == 0 {
		return pipeHost{pipe.NewClient(copts)}
	}
	return host.NewRouter(host.RouterOptions{Fixed: hosts, Roots: executor.ClientRoots, Client: copts})
}

// pipeHost adapts a pipe.Client (whose Close returns an error) to
// bridge.Host.
type pipeHost struct{ *pipe.Client }

func (c pipeHost) Close() { c.Client.Close() }
