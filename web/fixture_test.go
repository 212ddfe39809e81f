package web

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/projections"
)

// Browsers resolve *.localhost to loopback themselves; Go's resolver asks
// DNS. The tests' HTTP clients dial such names at 127.0.0.1, as a browser
// would.
func init() {
	d := &net.Dialer{}
	http.DefaultTransport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, port, err := net.SplitHostPort(addr); err == nil && strings.HasSuffix(host, ".localhost") {
			addr = net.JoinHostPort("127.0.0.1", port)
		}
		return d.DialContext(ctx, network, addr)
	}
}

// fixture is a real hub on a temp data dir, a real workspace host behind a
// real pipe, and the UI on a loopback port.
type fixture struct {
	t      *testing.T
	ctx    context.Context
	node   *hub.Node
	em     *events.Emitter
	srv    *Server
	url    string // the UI's origin, http://tb-<random>.localhost:PORT
	ws     string // the workspace directory
	client *pipe.Client
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(dir, "data")), Role: hub.Elect, Name: "web-test"})
	em := events.NewEmitter(node, events.EmitterOptions{Payloads: node}) // long values whole, as in the bridge
	wsDir := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(wsDir, "src"), 0o755)
	os.WriteFile(filepath.Join(wsDir, "src", "a.go"), []byte("package a\n\nfunc A() int { return 1 }\n"), 0o644)
	ws, err := host.OpenWorkspace(wsDir)
	if err != nil {
		t.Fatal(err)
	}
	props, err := host.OpenProposals(ws, em, filepath.Join(dir, "state", "proposals"), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	reviews, err := host.OpenReviews(ws, filepath.Join(dir, "state", "reviews"), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{WS: ws, Proposals: props, Reviews: reviews, Rec: em}
	os.MkdirAll(filepath.Join(dir, "run"), 0o700)
	sock := filepath.Join(dir, "run", "host.sock")
	pl, err := pipe.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	go pipe.NewServer(pipe.ServerOptions{Handlers: h.Handlers(), Recorder: em}).Serve(ctx, pl)
	client := pipe.NewClient(pipe.ClientOptions{Path: sock, Recorder: em})

	l, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Options{Addr: l.Addr().String(), Log: node, Host: client, Rec: em, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ctx, l)
	f := &fixture{t: t, ctx: ctx, node: node, em: em, srv: srv, url: srv.Origin(), ws: wsDir, client: client}
	t.Cleanup(func() {
		cancel()
		client.Close()
		ws.Close()
		em.Close(context.Background())
		node.Close()
	})
	return f
}

// login returns a client holding a session cookie, and the CSRF token of
// that session.
func (f *fixture) login() (*http.Client, string) {
	f.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(f.srv.URL())
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || strings.Contains(resp.Header.Get("Location"), "token") {
		f.t.Fatalf("token exchange: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	sid := ""
	for _, ck := range resp.Cookies() {
		if ck.Name == cookieName {
			sid = ck.Value
			if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
				f.t.Fatalf("cookie is not HttpOnly SameSite=Strict: %+v", ck)
			}
		}
	}
	if sid == "" {
		f.t.Fatal("no session cookie")
	}
	return c, f.srv.csrfToken(sid)
}

// propose makes a pending edit proposal of src/a.go through the host.
func (f *fixture) propose(orig, repl string) host.Proposal {
	f.t.Helper()
	b, _ := os.ReadFile(filepath.Join(f.ws, "src", "a.go"))
	sum := sha256.Sum256(b)
	args, _ := json.Marshal(host.ProposeArgs{Files: []host.FileChange{{Path: "src/a.go", BaseHash: hex.EncodeToString(sum[:]),
		Edits: []host.Edit{{Original: orig, Replacement: repl}}}}})
	resp, err := f.client.Call(f.ctx, pipe.Request{Command: "propose_text_edits", RequestID: f.em.NewID().String(),
		OperationID: f.em.NewID().String(), Payload: args})
	if err != nil || !resp.OK {
		f.t.Fatalf("propose: %v %+v", err, resp)
	}
	var out struct {
		ID          string `json:"proposalId"`
		ContentHash string `json:"contentHash"`
	}
	json.Unmarshal(resp.Payload, &out)
	return host.Proposal{ID: out.ID, ContentHash: out.ContentHash}
}

// proposal returns the host's current state of proposal id.
func (f *fixture) proposal(id string) host.Proposal {
	f.t.Helper()
	resp, err := f.client.Call(f.ctx, pipe.Request{Command: "proposals.list", RequestID: f.em.NewID().String(), OperationID: f.em.NewID().String()})
	if err != nil {
		f.t.Fatal(err)
	}
	var list []host.Proposal
	json.Unmarshal(resp.Payload, &list)
	for _, p := range list {
		if p.ID == id {
			return p
		}
	}
	f.t.Fatalf("no proposal %s", id)
	return host.Proposal{}
}

// askApproval records a tool call waiting for approval, as the executor
// does before it asks.
func (f *fixture) askApproval(args string) projections.Approval {
	f.t.Helper()
	req := f.em.NewID()
	p := projections.Approval{ID: f.em.NewID().String(), Tool: "write_thing", RequestID: req, ArgsHash: executor.ArgsHash(json.RawMessage(args)),
		Args: args, Deadline: time.Now().Add(time.Hour)}
	f.em.Emit(events.Event{Kind: events.KindApprovalRequested, RequestID: req, Attrs: events.A(events.AttrApprovalID, p.ID, events.AttrTool, p.Tool, events.AttrArgsHash, p.ArgsHash, "args", args, events.AttrDeadline, p.Deadline.Format(time.RFC3339Nano))})
	if err := f.em.Flush(f.ctx, req); err != nil {
		f.t.Fatal(err)
	}
	return p
}

// decisions counts approval.decided events for approval id.
func (f *fixture) decisions(p projections.Approval) int {
	f.t.Helper()
	evs, err := f.node.ByRequest(f.ctx, p.RequestID)
	if err != nil {
		f.t.Fatal(err)
	}
	n := 0
	for _, e := range evs {
		if e.Kind == events.KindApprovalDecided && e.Attrs.Get(events.AttrApprovalID) == p.ID {
			n++
		}
	}
	return n
}

// rejections returns the ui.request.rejected events recorded so far.
func (f *fixture) rejections() []events.Event {
	f.t.Helper()
	if err := f.em.FlushAll(f.ctx); err != nil {
		f.t.Fatal(err)
	}
	var out []events.Event
	for from := uint64(1); ; {
		evs, next, err := f.node.Range(f.ctx, from, 1024)
		if err != nil {
			f.t.Fatal(err)
		}
		for _, e := range evs {
			if e.Kind == events.KindUIRejected {
				out = append(out, e)
			}
		}
		if len(evs) == 0 {
			return out
		}
		from = next
	}
}

// post sends a form to path with the given Origin (empty: none).
func post(c *http.Client, base, path, origin string, form url.Values) *http.Response {
	req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := c.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	return resp
}
