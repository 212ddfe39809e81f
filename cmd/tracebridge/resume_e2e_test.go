package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// pollingUpstream serves a go-sdk server that keeps its events (so a
// client resumes its streams) with two tools: "poll" ends its call's
// stream at once (SEP-1699, asking the client to come back in 2 s) and
// answers 300 ms later; "slow" answers after 800 ms on its stream.
func pollingUpstream(t *testing.T) string {
	t.Helper()
	s := sdk.NewServer(&sdk.Implementation{Name: "polling", Version: "1"}, nil)
	type args struct{}
	sdk.AddTool(s, &sdk.Tool{Name: "poll"}, func(ctx context.Context, req *sdk.CallToolRequest, _ args) (*sdk.CallToolResult, any, error) {
		if req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(sdk.CloseSSEStreamArgs{RetryAfter: 2 * time.Second})
		}
		time.Sleep(300 * time.Millisecond)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "polled answer"}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "slow"}, func(ctx context.Context, req *sdk.CallToolRequest, _ args) (*sdk.CallToolResult, any, error) {
		time.Sleep(800 * time.Millisecond)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "slow answer"}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, &sdk.StreamableHTTPOptions{EventStore: sdk.NewMemoryEventStore(nil)})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://" + l.Addr().String() + "/mcp"
}

// sseEvent is one event of a stream as a client reads it.
type sseEvent struct{ id, retry, data string }

// readEvents reads events from an event stream until it ends, stop says
// so, or ctx ends.
func readEvents(t *testing.T, resp *http.Response, stop func(sseEvent) bool) []sseEvent {
	t.Helper()
	defer resp.Body.Close()
	var out []sseEvent
	var ev sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			out = append(out, ev)
			if stop(ev) {
				return out
			}
			ev = sseEvent{}
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "id":
			ev.id = v
		case "retry":
			ev.retry = v
		case "data":
			ev.data += v
		}
	}
	return out
}

// frontDoorClient speaks raw HTTP to the front door: what a client of the
// given protocol version sends.
type frontDoorClient struct {
	t            *testing.T
	url, token   string
	version, sid string
	ctx          context.Context
}

func (c *frontDoorClient) do(method, body string, header ...string) *http.Response {
	c.t.Helper()
	req, _ := http.NewRequestWithContext(c.ctx, method, c.url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", c.version)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, body, err)
	}
	return resp
}

func (c *frontDoorClient) initialize() {
	c.t.Helper()
	resp := c.do(http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, c.version))
	io.Copy(io.Discard, resp.Body) // the answer, before initialized
	resp.Body.Close()
	if c.sid = resp.Header.Get("Mcp-Session-Id"); c.sid == "" {
		c.t.Fatalf("initialize: %d, no session", resp.StatusCode)
	}
	c.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
}

func (c *frontDoorClient) call(id int, tool string) *http.Response {
	return c.do(http.MethodPost, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{}}}`, id, tool))
}

func answers(id int) func(sseEvent) bool {
	return func(e sseEvent) bool { return strings.Contains(e.data, fmt.Sprintf(`"id":%d,"result"`, id)) }
}

var eventID = regexp.MustCompile(`^([0-9]+)_([0-9]+)$`)

// SEP-1699 through the front door: a call's stream on 2025-11-25 begins
// with a priming event (an id, the retry delay, no data); when the
// upstream ends the call's stream before answering, the client's stream
// ends the same way and GET with Last-Event-ID brings the answer; a client
// whose stream broke resumes it, and its call was not cancelled. A client
// of an older revision gets no priming. The go-sdk client gets the
// polling tool's answer through as directly.
func TestFrontDoorStreamsResume(t *testing.T) {
	long(t)
	up := pollingUpstream(t)
	cfg := writeConfig(t, fmt.Sprintf("[servers.up]\nurl = %q\nprefix = false\napproval = { \"*\" = \"never\" }\n", up))
	data := filepath.Join(t.TempDir(), "data")
	url, token, stderr, _ := startHTTPBridge(t, data, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := &frontDoorClient{t: t, url: url, token: token, version: "2025-11-25", ctx: ctx}
	c.initialize()

	// The upstream polls: the stream is primed, then ends unanswered.
	evs := readEvents(t, c.call(1, "poll"), answers(1))
	if len(evs) == 0 || !eventID.MatchString(evs[0].id) || !strings.HasSuffix(evs[0].id, "_0") || evs[0].retry != "500" || evs[0].data != "" {
		t.Fatalf("the first event is not a priming one (id N_0, retry 500, no data): %+v", evs)
	}
	var last sseEvent
	for _, e := range evs {
		if e.id != "" {
			last = e
		}
	}
	if answers(1)(evs[len(evs)-1]) {
		t.Fatalf("the stream carried the answer: the upstream's poll did not reach the client: %+v", evs)
	}
	if evs[len(evs)-1].retry != "2000" {
		t.Errorf("the stream did not end asking for the upstream's own delay (retry: 2000): %+v", evs)
	}
	resp := c.do(http.MethodGet, "", "Last-Event-ID", last.id)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET with Last-Event-ID %s: %d", last.id, resp.StatusCode)
	}
	evs = readEvents(t, resp, answers(1))
	got := evs[len(evs)-1]
	if !answers(1)(got) || !strings.Contains(got.data, "polled answer") || !strings.Contains(got.data, "tracebridge/requestId") {
		t.Fatalf("resumed stream: %+v", evs)
	}
	m, l := eventID.FindStringSubmatch(got.id), eventID.FindStringSubmatch(last.id)
	if m == nil || m[1] != l[1] || m[2] <= l[2] {
		t.Errorf("the answer's id %q does not follow %q on the same stream", got.id, last.id)
	}
	var answer struct {
		Result struct {
			Meta map[string]string `json:"_meta"`
		}
	}
	json.Unmarshal([]byte(got.data), &answer)
	req := answer.Result.Meta["tracebridge/requestId"]
	// Both hops' returns are on the call's record.
	for _, kind := range []string{"upstream.stream.resumed", "mcp.stream.resumed"} {
		eventually(t, 10*time.Second, kind+" names the call", func() bool {
			out, _ := exec.Command(tbBin, "--data", data, "tail", "-n", "100000", "--json").Output()
			for _, line := range strings.Split(string(out), "\n") {
				if strings.Contains(line, `"kind":"`+kind+`"`) && strings.Contains(line, `"requestId":"`+req+`"`) {
					return true
				}
			}
			return false
		})
	}

	// The client's stream breaks after the priming event: the call goes
	// on, and its answer waits for the client to come back.
	rctx, rcancel := context.WithCancel(ctx)
	c.ctx = rctx
	resp = c.call(2, "slow")
	c.ctx = ctx
	evs = readEvents(t, resp, func(sseEvent) bool { return true })
	rcancel()
	if len(evs) != 1 || !strings.HasSuffix(evs[0].id, "_0") {
		t.Fatalf("slow call's first events: %+v", evs)
	}
	evs = readEvents(t, c.do(http.MethodGet, "", "Last-Event-ID", evs[0].id), answers(2))
	if len(evs) == 0 || !strings.Contains(evs[len(evs)-1].data, "slow answer") {
		t.Fatalf("after the stream broke, the answer did not come on resumption: %+v", evs)
	}
	if n := countKind(t, data, "mcp.stream.resumed"); n < 2 {
		t.Errorf("%d returns of clients recorded, want both (the poll's and the broken stream's)", n)
	}
	for _, bad := range []string{"nonsense", "999_0"} {
		if resp := c.do(http.MethodGet, "", "Last-Event-ID", bad); resp.StatusCode != http.StatusBadRequest {
			t.Errorf("Last-Event-ID %q: %d, want 400", bad, resp.StatusCode)
		}
	}

	// The harmless twin: a 2025-06-18 client's stream is not primed, and
	// its answer comes on it. (Its "poll" fails as it does directly: the
	// server cannot ask a client of that revision to come back.)
	old := &frontDoorClient{t: t, url: url, token: token, version: "2025-06-18", ctx: ctx}
	old.initialize()
	evs = readEvents(t, old.call(1, "slow"), answers(1))
	if len(evs) == 0 || evs[0].id != "" || !strings.Contains(evs[len(evs)-1].data, "slow answer") {
		t.Errorf("a 2025-06-18 client's stream: %+v", evs)
	}

	// Through equals direct: the go-sdk client at 2025-11-25.
	for name, endpoint := range map[string]string{"direct": up, "through": url} {
		cl := sdk.NewClient(&sdk.Implementation{Name: "gosdk", Version: "1"}, nil)
		cs, err := cl.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer{token}}},
			&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "poll"})
		if err != nil || res.IsError || len(res.Content) == 0 || res.Content[0].(*sdk.TextContent).Text != "polled answer" {
			t.Errorf("%s: the go-sdk client's poll call: %v %v", name, res, err)
		}
		cs.Close()
	}
	if t.Failed() {
		t.Logf("bridge stderr:\n%s", stderr.String())
	}
}
