package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/store/storetest"
)

// The workspace tools reach a real host over a real socket: they find the
// projects, propose an edit (nothing written until approved), and carry
// the host's codes unchanged (an ambiguous original, a path outside the
// root); with no host listening they say what to start.
func TestWorkspaceToolsThroughARealHost(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := storetest.Open(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "ws")
	os.MkdirAll(filepath.Join(root, "svc"), 0o755)
	os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/ws\n"), 0o644)
	src := "package svc\n\nfunc Price() int { return 100 }\n\n// return 100 is the price\n"
	os.WriteFile(filepath.Join(root, "svc", "price.go"), []byte(src), 0o644)
	ws, err := host.OpenWorkspace(root)
	if err != nil {
		t.Fatal(err)
	}
	props, err := host.OpenProposals(ws, log.Emitter, filepath.Join(dir, "state", "proposals"), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	reviews, err := host.OpenReviews(ws, filepath.Join(dir, "state", "reviews"), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, "run"), 0o700)
	sock := filepath.Join(dir, "run", "host.sock")
	l, err := pipe.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	h := &host.Host{WS: ws, Proposals: props, Reviews: reviews, Rec: log.Emitter}
	go pipe.NewServer(pipe.ServerOptions{Handlers: h.Handlers(), Recorder: log.Emitter}).Serve(ctx, l)
	client := pipe.NewClient(pipe.ClientOptions{Path: sock, Recorder: log.Emitter})
	defer client.Close()

	tools := map[string]*executor.Tool{}
	for _, tl := range Workspace(client) {
		tools[tl.ID] = tl
	}
	call := func(tool string, args any) (string, error) {
		b, _ := json.Marshal(args)
		out, err := tools[tool].Run(ctx, executor.Call{RequestID: log.Emitter.NewID(), OperationID: log.Emitter.NewID(), Args: b})
		raw, _ := out.(json.RawMessage)
		return string(raw), err
	}

	if out, err := call("list_projects", map[string]any{}); err != nil || !strings.Contains(out, "go.mod") {
		t.Fatalf("list_projects: %v %s", err, out)
	}
	if out, err := call("get_selection", map[string]any{}); err != nil || out != "null" {
		t.Fatalf("get_selection with nothing selected: %v %s", err, out)
	}
	out, err := call("propose_text_edit", map[string]any{"path": "svc/price.go", "original": "func Price() int { return 100 }", "replacement": "func Price() int { return 120 }"})
	if err != nil || !strings.Contains(out, `"pending"`) {
		t.Fatalf("propose_text_edit: %v %s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "svc", "price.go")); string(b) != src {
		t.Fatal("a proposal wrote the file before it was approved")
	}
	if list := props.List(); len(list) != 1 || list[0].State != host.Pending {
		t.Fatalf("proposals: %+v", list)
	}
	for args, want := range map[[3]string]events.Code{
		{"svc/price.go", "return 100", "return 120"}: events.CodeAmbiguous,
		{"../outside.go", "x", "y"}:                  events.CodePathRefused,
	} {
		if _, err := call("propose_text_edit", map[string]any{"path": args[0], "original": args[1], "replacement": args[2]}); events.CodeOf(err) != want {
			t.Errorf("propose %v: %v, want %s", args, err, want)
		}
	}

	cancel()
	l.Close()
	gone := pipe.NewClient(pipe.ClientOptions{Path: filepath.Join(dir, "run", "nobody.sock"), Recorder: log.Emitter})
	defer gone.Close()
	b, _ := json.Marshal(map[string]any{})
	_, err = Workspace(gone)[1].Run(context.Background(), executor.Call{RequestID: log.Emitter.NewID(), OperationID: log.Emitter.NewID(), Args: b})
	if events.CodeOf(err) != events.CodePipeUnavailable || !strings.Contains(err.Error(), "tracebridge up --root") {
		t.Fatalf("with no host: %v", err)
	}
}
