package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

// conformanceDir holds the MCP conformance suite, the Node 24 that runs
// it and the suite's reference server (testdata/conformance, installed by
// .ci/deps with npm ci from its lockfile).
func conformanceDir(t *testing.T) (dir, node string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "conformance"))
	if err != nil {
		t.Fatal(err)
	}
	node = filepath.Join(dir, "node_modules", ".bin", "node")
	if _, err := os.Stat(node); err != nil {
		t.Fatalf("the conformance suite is not installed (%v): run `bash .ci/deps` (npm ci in %s), then test again", err, dir)
	}
	return dir, node
}

// startReferenceServer runs the conformance suite's own reference server
// (everything-server.ts of the suite at v0.1.16) on a free port.
func startReferenceServer(t *testing.T, dir, node string) string {
	t.Helper()
	return startReference(t, dir, node, "everything-server.ts")
}

// startReference runs a reference server (node ARGS… in dir) on a free
// port and returns its MCP endpoint.
func startReference(t *testing.T, dir, node string, args ...string) string {
	t.Helper()
	port := freePort(t)
	cmd := exec.Command(node, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	out := &testenv.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	ownGroup(cmd) // tsx runs the server in a child: end the group
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGroup(cmd); cmd.Wait() })
	eventually(t, 30*time.Second, "the reference server listens", func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return fmt.Sprintf("http://localhost:%d/mcp", port)
}

// conformanceChecks runs the suite's server scenarios against url (with
// the suite's further args, as --requirements REVISION) and returns each
// check's status by "scenario/check".
func conformanceChecks(t *testing.T, dir, node, url string, args ...string) map[string]string {
	t.Helper()
	outDir := t.TempDir()
	cmd := exec.Command(node, append([]string{filepath.Join(dir, "node_modules", ".bin", "conformance"), "server", "--url", url, "-o", outDir}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("the conformance suite did not run: %v\n%s", err, out)
	}
	checks := readChecks(t, outDir)
	if len(checks) == 0 {
		t.Fatalf("the conformance suite wrote no checks:\n%s", out)
	}
	return checks
}

// readChecks reads the checks the suite wrote to outDir, by
// "scenario/check".
func readChecks(t *testing.T, outDir string) map[string]string {
	t.Helper()
	checks := map[string]string{}
	filepath.WalkDir(outDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		var cs []struct {
			ID, Status, ErrorMessage string
		}
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		run, _ := filepath.Rel(outDir, filepath.Dir(path)) // auth/NAME-2026-… for a suite's scenario
		scenario := filepath.ToSlash(run)
		if m := runDirRE.FindStringSubmatch(filepath.Base(run)); m != nil {
			scenario = filepath.ToSlash(filepath.Join(filepath.Dir(run), m[1]))
		}
		for _, c := range cs {
			status := c.Status
			if c.ErrorMessage != "" {
				status += ": " + oneLineOf(c.ErrorMessage, 200)
			}
			checks[scenario+"/"+c.ID] = status
		}
		return nil
	})
	return checks
}

// runDirRE is the suite's folder of one scenario's run:
// server-NAME-2026-11-25T12-05-46-123Z (server scenarios), or
// NAME-2026-… (client scenarios).
var runDirRE = regexp.MustCompile(`^(?:server-)?(.+)-\d{4}-\d{2}-\d{2}T`)

func oneLineOf(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// frontDoorProxy is what the suite reaches tracebridge through: it cannot
// send a bearer token, so this adds it, and it speaks for the front
// door's Host and Origin when the suite names the proxy itself (any other
// Host or Origin, as the DNS-rebinding scenario sends, passes unchanged).
func frontDoorProxy(t *testing.T, bridgeURL, token string) string {
	t.Helper()
	target, _ := url.Parse(bridgeURL)
	target.Path = ""
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	own := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	swap := func(hostport string) string {
		if h, p, err := net.SplitHostPort(hostport); err == nil && p == own && (h == "localhost" || h == "127.0.0.1") {
			return target.Host
		}
		return hostport
	}
	p := &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(r *httputil.ProxyRequest) {
		host := r.In.Host
		r.SetURL(target)
		r.Out.Host = swap(host)
		if o := r.In.Header.Get("Origin"); o != "" {
			if rest, ok := strings.CutPrefix(o, "http://"); ok {
				r.Out.Header.Set("Origin", "http://"+swap(rest))
			}
		}
		r.Out.Header.Set("Authorization", "Bearer "+token)
	}}
	srv := &http.Server{Handler: p}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return "http://localhost:" + own + "/mcp"
}

// Through equals direct: the official conformance suite's server scenarios
// against its own reference server, directly and through `tracebridge mcp
// --http` (the server behind the gateway with prefix = false, so the
// suite's names are the server's), in the same run. Every check that
// passes directly passes through, and the relayed server-to-client
// requests are on the record.
func TestConformanceThroughTheGateway(t *testing.T) {
	long(t)
	dir, node := conformanceDir(t)
	ref := startReferenceServer(t, dir, node)
	direct := conformanceChecks(t, dir, node, ref)

	cfg := filepath.Join(t.TempDir(), "tracebridge.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[servers.cf]\nurl = %q\nprefix = false\napproval = { \"*\" = \"never\" }\n", ref)), 0o600)
	data := filepath.Join(t.TempDir(), "data")
	bridgeURL, token, stderr, _ := startHTTPBridge(t, data, "TRACEBRIDGE_CONFIG="+cfg)
	front := frontDoorProxy(t, bridgeURL, token)
	through := conformanceChecks(t, dir, node, front)
	againAlone(t, direct, through, func(sc string) map[string]string {
		return conformanceChecks(t, dir, node, front, "--scenario", sc)
	})
	compareConformance(t, direct, through)
	if t.Failed() {
		t.Logf("bridge stderr:\n%s", stderr.String())
	}
	// The sampling and elicitation the scenarios caused were relayed and
	// recorded as their own crossings, with the client's answers.
	if n := countKind(t, data, "upstream.client.asked"); n == 0 {
		t.Error("no upstream.client.asked event: the relayed requests are not on the record")
	}
	answered := countKind(t, data, "upstream.client.answered")
	refused := countCode(t, data, "upstream.client.answered", events.CodeClientIncapable) + countCode(t, data, "upstream.client.answered", events.CodeClientError)
	if answered-refused == 0 {
		t.Errorf("no upstream.client.answered event carries a client's answer (%d answered, %d refused or failed)", answered, refused)
	}
}

// knownGaps are the checks that pass directly and not through, each with
// why: listed, never hidden (the note of the issue that left them names
// them too). Any other difference fails the test.
var knownGaps = map[string]string{
	// The scenario changes the lists through hooks the reference server
	// never lists (test_trigger_tool_change, test_trigger_prompt_change):
	// the gateway refuses a tool its server did not list (UnknownTool):
	// there is no descriptor to pin, judge or show an operator. A change
	// the server makes reaches a listen stream through the gateway
	// (TestLatestProtocolClientOverHTTP).
	"server-stateless/sep-2575-server-sends-tools-list-changed-on-subscription":   "the trigger is an unlisted tool: refused, never forwarded",
	"server-stateless/sep-2575-server-sends-prompts-list-changed-on-subscription": "the trigger is an unlisted tool: refused, never forwarded",
}

// againAlone runs the scenarios of the checks that passed directly and not
// through once more, each alone, through, with run (the suite's own client
// waits 500 ms for some answers, which a loaded machine can miss through
// the gateway): what passes then is taken, and the first run's failure
// logged. Nothing that fails twice is forgiven.
func againAlone(t *testing.T, direct, through map[string]string, run func(scenario string) map[string]string) {
	t.Helper()
	scenarios := map[string]bool{}
	for k, d := range direct {
		if _, gap := knownGaps[k]; d == "SUCCESS" && through[k] != "SUCCESS" && !gap {
			sc, _, _ := strings.Cut(k, "/")
			scenarios[sc] = true
		}
	}
	for sc := range scenarios {
		again := run(sc)
		for k, v := range again {
			if through[k] != "SUCCESS" && v == "SUCCESS" && direct[k] == "SUCCESS" {
				t.Logf("%s failed through on the first run (%q) and passed run again alone", k, through[k])
				through[k] = v
			}
		}
	}
}

// compareConformance fails for each check that passes directly but not
// through (but the knownGaps, logged as such), and logs both columns,
// scenario by scenario.
func compareConformance(t *testing.T, direct, through map[string]string) {
	t.Helper()
	var keys []string
	for k := range direct {
		keys = append(keys, k)
	}
	for k := range through {
		if _, ok := direct[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	passed := func(m map[string]string) (n int) {
		for _, v := range m {
			if v == "SUCCESS" {
				n++
			}
		}
		return n
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-60s %-10s %s\n", "scenario/check", "direct", "through tracebridge")
	for _, k := range keys {
		d, th := direct[k], through[k]
		fmt.Fprintf(&table, "%-60s %-10s %s\n", k, first(d), th)
		if gap, known := knownGaps[k]; known && d == "SUCCESS" && th != "SUCCESS" {
			t.Logf("%s passes directly but not through the gateway, a known gap: %s", k, gap)
		} else if d == "SUCCESS" && th != "SUCCESS" {
			t.Errorf("%s passes directly but not through the gateway: %q", k, th)
		}
	}
	t.Logf("conformance checks passed: %d of %d directly, %d of %d through tracebridge\n%s",
		passed(direct), len(direct), passed(through), len(through), table.String())
	if passed(direct) == 0 {
		t.Fatal("no check passed directly: the reference server did not run as it should")
	}
}

func first(s string) string {
	if s == "" {
		return "-"
	}
	f, _, _ := strings.Cut(s, ":")
	return f
}

// headerLog is a reverse proxy in front of an HTTP MCP server that notes,
// for each request, its method, whether it is initialize, and the MCP
// headers it carried.
type headerLog struct {
	mu   sync.Mutex
	reqs []loggedRequest
}

type loggedRequest struct {
	method, protocol, session string
	initialize, call          bool
}

func (h *headerLog) start(t *testing.T, upstream string) string {
	t.Helper()
	target, _ := url.Parse(upstream)
	target.Path = ""
	p := &httputil.ReverseProxy{FlushInterval: -1, Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target) }}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.mu.Lock()
		h.reqs = append(h.reqs, loggedRequest{method: r.Method, protocol: r.Header.Get("Mcp-Protocol-Version"),
			session: r.Header.Get("Mcp-Session-Id"), initialize: bytes.Contains(body, []byte(`"initialize"`)),
			call: bytes.Contains(body, []byte(`"tools/call"`))})
		h.mu.Unlock()
		p.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/mcp"
}

// summary says what a client did: whether its tools/call POSTs carried
// MCP-Protocol-Version and the session id, and whether it opened the
// standalone GET stream.
func (h *headerLog) summary() (postsCarryHeaders, openedGET bool, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	postsCarryHeaders = true
	for _, r := range h.reqs {
		switch {
		case r.method == http.MethodGet:
			openedGET = true
		case r.method == http.MethodPost && r.call:
			n++
			postsCarryHeaders = postsCarryHeaders && r.protocol != "" && r.session != ""
		}
	}
	return postsCarryHeaders, openedGET, n
}

// As a Streamable HTTP client, the gateway does what a plain go-sdk client
// does (same run, same server, each through a header-logging proxy): its
// calls carry MCP-Protocol-Version and the session id, and the standalone
// GET stream (where servers send their own
// requests) is opened.
func TestHTTPUpstreamSpeaksAsTheSDKClientDoes(t *testing.T) {
	long(t)
	dir, node := conformanceDir(t)
	ref := startReferenceServer(t, dir, node)

	var direct, through headerLog
	c := sdk.NewClient(&sdk.Implementation{Name: "plain", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: direct.start(t, ref)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}

	cfg := writeConfig(t, fmt.Sprintf("[servers.cf]\nurl = %q\napproval = { \"*\" = \"never\" }\n", through.start(t, ref)))
	b := startBridge(t, tbBin, filepath.Join(t.TempDir(), "data"), "2025-11-25", cfg)
	if _, _, code := b.call(t, "cf__test_simple_text", map[string]any{}); code != "" {
		t.Fatalf("through the gateway: %s", code)
	}
	time.Sleep(300 * time.Millisecond) // the GET stream opens beside the calls
	cs.Close()
	dh, dg, dn := direct.summary()
	th, tg, tn := through.summary()
	t.Logf("plain go-sdk client: %d tools/call POSTs, headers on all: %v, GET stream: %v; tracebridge: %d, %v, %v", dn, dh, dg, tn, th, tg)
	if !dh || !dg {
		t.Fatalf("the plain client's requests are not what this test expects: headers %v, GET %v", dh, dg)
	}
	if th != dh || tg != dg {
		t.Fatalf("the gateway as an HTTP client: headers on every POST %v (plain client %v), GET stream %v (plain client %v)", th, dh, tg, dg)
	}
}
