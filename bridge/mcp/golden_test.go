package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/bridge/tools"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
	"github.com/tracebridge/tracebridge/pipe"
)

var update = flag.Bool("update", false, "rewrite testdata/frames from what the bridge answers now")

// goldenCalls are the conversations testdata/frames holds, in order: each
// tool's success and its errors, through the real executor, a real host
// over a real pipe, and a real hub. $REQ(name) in a request stands for the
// request id the named earlier call's result gave.
var goldenCalls = []struct{ name, request string }{
	{"regex-ok", `{"name":"regex_text_search","arguments":{"pattern":"b+","text":"abba\nbob"}}`},
	{"regex-bad-pattern", `{"name":"regex_text_search","arguments":{"pattern":"(","text":"x"}}`},
	{"regex-schema", `{"name":"regex_text_search","arguments":{"pattern":5,"text":"x"}}`},
	{"bm25-ok", `{"name":"bm25_text_search","arguments":{"query":"price tax","entries":[{"id":"a","text":"the price of tea"},{"id":"b","text":"tax and price"}]}}`},
	{"bm25-no-words", `{"name":"bm25_text_search","arguments":{"query":"!!","entries":[{"id":"a","text":"x"}]}}`},
	{"unknown-tool", `{"name":"no_such_tool","arguments":{}}`},
	{"trace-replay-ok", `{"name":"trace_replay","arguments":{"requestId":"$REQ(regex-ok)"}}`},
	{"trace-replay-bad-id", `{"name":"trace_replay","arguments":{"requestId":"nope"}}`},
	{"trace-diagram-ok", `{"name":"trace_diagram","arguments":{"requestId":"$REQ(regex-bad-pattern)"}}`},
	{"list-projects", `{"name":"list_projects","arguments":{}}`},
	{"get-active-document-none", `{"name":"get_active_document","arguments":{}}`},
	{"get-selection-none", `{"name":"get_selection","arguments":{}}`},
	{"get-diagnostics-unconfigured", `{"name":"get_diagnostics","arguments":{}}`},
	{"propose-ok", `{"name":"propose_text_edit","arguments":{"path":"svc/a.go","original":"return 1","replacement":"return 2"}}`},
	{"propose-ambiguous", `{"name":"propose_text_edit","arguments":{"path":"svc/a.go","original":"func","replacement":"fn"}}`},
	{"propose-escape", `{"name":"propose_text_edit","arguments":{"path":"../outside.go","original":"x","replacement":"y"}}`},
	{"propose-edits-ok", `{"name":"propose_text_edits","arguments":{"files":[{"path":"svc/a.go","edits":[{"original":"package svc","replacement":"package svc // edited"}]}]}}`},
	{"present-review-ok", `{"name":"present_review","arguments":{"content":"# Review\n\nSee [svc/a.go:3][].","mode":"replace"}}`},
	{"present-review-bad-mode", `{"name":"present_review","arguments":{"content":"x","mode":"sideways"}}`},
	{"present-review-default-mode", `{"name":"present_review","arguments":{"content":"# Again\n\nNo mode: replace."}}`},
	{"present-review-no-content", `{"name":"present_review","arguments":{"mode":"append"}}`},
	{"present-review-missing-section", `{"name":"present_review","arguments":{"content":"none","mode":"update-section","section":"Risks"}}`},
}

// TestGoldenFrames sends each golden call as a raw JSON-RPC line and
// compares the response line (ids, times and hashes normalised) with
// testdata/frames/<name>.txtar. go test -run TestGoldenFrames -update
// rewrites them.
func TestGoldenFrames(t *testing.T) {
	ctx := context.Background()
	base := t.TempDir()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(base, "data")), Role: hub.Elect, Logger: quiet, Name: "golden"})
	em := events.NewEmitter(node, events.EmitterOptions{Logger: quiet})
	defer em.Close(ctx)
	wsDir := filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(wsDir, "svc"), 0o755)
	os.WriteFile(filepath.Join(wsDir, "go.mod"), []byte("module x\n"), 0o644)
	os.WriteFile(filepath.Join(wsDir, "svc", "a.go"), []byte("package svc\n\nfunc A() int { return 1 }\n\nfunc B() int { return 3 }\n"), 0o644)
	ws, err := host.OpenWorkspace(wsDir)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	fixed := func() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }
	props, _ := host.OpenProposals(ws, em, filepath.Join(base, "state", "proposals"), fixed)
	reviews, _ := host.OpenReviews(ws, filepath.Join(base, "state", "reviews"), fixed)
	// No language servers: the frames must not depend on a gopls on PATH.
	h := &host.Host{WS: ws, Proposals: props, Reviews: reviews, Rec: em, LanguageServers: []host.Language{}}
	sock := filepath.Join(base, "run", "host.sock")
	os.MkdirAll(filepath.Dir(sock), 0o700)
	l, err := pipe.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	hctx, stop := context.WithCancel(ctx)
	defer stop()
	go pipe.NewServer(pipe.ServerOptions{Handlers: h.Handlers(), Recorder: em, Logger: quiet}).Serve(hctx, l)
	client := pipe.NewClient(pipe.ClientOptions{Path: sock, Recorder: em, Logger: quiet})
	defer client.Close()

	cat, err := executor.NewCatalog(append(append([]*executor.Tool{tools.Regex(), tools.BM25(nil)}, tools.Workspace(client)...), tools.Trace(node)...)...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := config.Parse("golden", []byte("[approval]\nmode = \"allow\"\n[policy]\ngrant = [\"text.search\", \"trace.read\", \"workspace.read\", \"workspace.propose\", \"workspace.write\"]\n"))
	srv := New(Options{Executor: executor.New(executor.Options{Catalog: cat, Emitter: em, Log: node, Config: cfg, Logger: quiet}),
		Emitter: em, Logger: quiet, Version: "golden"})
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, sr, sw) }()
	out := bufio.NewScanner(cr)
	out.Buffer(make([]byte, 1<<20), 16<<20)
	exchange := func(line string) string {
		if _, err := io.WriteString(cw, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !out.Scan() {
			t.Fatal("the bridge closed its output")
		}
		return out.Text()
	}
	exchange(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"golden","version":"1"}}}`)
	io.WriteString(cw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")

	reqOf := map[string]string{}
	refRE := regexp.MustCompile(`\$REQ\(([a-z0-9-]+)\)`)
	for i, c := range goldenCalls {
		params := refRE.ReplaceAllStringFunc(c.request, func(m string) string { return reqOf[refRE.FindStringSubmatch(m)[1]] })
		request := `{"jsonrpc":"2.0","id":` + itoa(i+1) + `,"method":"tools/call","params":` + c.request + `}`
		resp := exchange(`{"jsonrpc":"2.0","id":` + itoa(i+1) + `,"method":"tools/call","params":` + params + `}`)
		var r struct {
			Result struct {
				Meta map[string]string `json:"_meta"`
			} `json:"result"`
		}
		json.Unmarshal([]byte(resp), &r)
		reqOf[c.name] = r.Result.Meta[MetaRequestID]
		got := normalize(resp, base)
		path := filepath.Join("testdata", "frames", c.name+".txtar")
		if *update {
			ar := &txtar.Archive{Comment: []byte("tools/call " + c.name + ": the request as sent, the response as answered (ids, times, hashes normalised)\n"),
				Files: []txtar.File{{Name: "request", Data: []byte(request + "\n")}, {Name: "response", Data: []byte(got + "\n")}}}
			if err := os.WriteFile(path, txtar.Format(ar), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatalf("%s: %v (go test ./bridge/mcp -run TestGoldenFrames -update writes it)", c.name, err)
		}
		var want string
		for _, f := range ar.Files {
			if f.Name == "request" && strings.TrimSpace(string(f.Data)) != request {
				t.Errorf("%s: the golden request differs from the case:\n%s", c.name, f.Data)
			}
			if f.Name == "response" {
				want = strings.TrimSpace(string(f.Data))
			}
		}
		if got != want {
			i := 0
			for i < len(got) && i < len(want) && got[i] == want[i] {
				i++
			}
			t.Errorf("%s: response differs from %s at byte %d (-update to accept)\n got: …%.300s\nwant: …%.300s", c.name, path, i, got[max(0, i-100):], want[max(0, i-100):])
		}
	}
	cw.Close()
	<-served
}

var (
	ulidRE  = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`)
	timeRE  = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	msRE    = regexp.MustCompile(`([A-Za-z]*(Ms|ms)\\*":)[0-9.e+-]+`) // also inside escaped JSON
	hashRE  = regexp.MustCompile(`((hash|prev)\\*":\\*")[0-9a-f]{64}`)
	seqRE   = regexp.MustCompile(`(seq\\*":)\d+`)
	bmMsRE  = regexp.MustCompile(`("boundaryMs":\{)[^}]*\}`)
	durText = regexp.MustCompile(`\d+(\.\d+)?(ms|µs|s)\b`)
)

// normalize removes what differs from run to run.
func normalize(s, tmp string) string {
	s = strings.ReplaceAll(s, tmp, "$TMP")
	s = ulidRE.ReplaceAllString(s, "<ULID>")
	s = timeRE.ReplaceAllString(s, "<TIME>")
	s = bmMsRE.ReplaceAllString(s, "${1}<MS>}")
	s = msRE.ReplaceAllString(s, "${1}0")
	s = hashRE.ReplaceAllString(s, `${1}<HASH>`)
	s = seqRE.ReplaceAllString(s, "${1}0")
	return durText.ReplaceAllString(s, "<DUR>")
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
