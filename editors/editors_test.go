// Package editors holds the editor end's tests: the Neovim plugin in nvim/
// and the VS Code extension in vscode/, each run in the real editor against
// the real tracebridge host and an MCP client through the real bridge.
package editors

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

var tbBin string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // every test here skips: no binary to build
	}
	tmp, err := os.MkdirTemp("", "tracebridge-editors-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tbBin = filepath.Join(tmp, "tracebridge")
	if out, err := exec.Command("go", "build", "-o", tbBin, "../cmd/tracebridge").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build tracebridge: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

// long skips a test under -short (make unit): the editors take seconds to
// start, and their installs come from .ci/deps.
func long(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("an editor end to end test (make test runs it)")
	}
}

// rig is a workspace, a data dir, the host serving them and an MCP client
// through `tracebridge mcp`.
type rig struct {
	ws, data string
	host     *exec.Cmd
	hostLog  *testenv.Buffer
	session  *sdk.ClientSession
}

// newRig writes files into a fresh workspace and starts its host.
func newRig(t *testing.T, files map[string]string) *rig {
	t.Helper()
	base, err := os.MkdirTemp("", "tbe") // short: socket paths have a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	r := &rig{ws: filepath.Join(base, "ws"), data: filepath.Join(base, "data"), hostLog: &testenv.Buffer{}}
	for name, text := range files {
		p := filepath.Join(r.ws, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r.host = exec.Command(tbBin, "--data", r.data, "host", "--root", r.ws)
	r.host.Stdout, r.host.Stderr = r.hostLog, r.hostLog
	if err := r.host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.host.Process.Signal(os.Interrupt)
		r.host.Wait()
		if t.Failed() {
			t.Logf("host log:\n%s", r.hostLog)
		}
	})
	eventually(t, 15*time.Second, "the host's registry entry", func() bool {
		m, _ := filepath.Glob(filepath.Join(r.data, "run", "hosts", "*.json"))
		return len(m) == 1
	})
	return r
}

// client starts `tracebridge mcp` in the workspace as an AI client does.
func (r *rig) client(t *testing.T) {
	t.Helper()
	cmd := exec.Command(tbBin, "--data", r.data, "mcp")
	cmd.Dir = r.ws
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := sdk.NewClient(&sdk.Implementation{Name: "editors-test", Version: "1.0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	r.session = s
	t.Cleanup(func() { s.Close() })
}

// call calls a tool and returns its structured result as JSON text, or
// fails the test on an error result.
func (r *rig) call(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	out, code := r.try(t, tool, args)
	if code != "" {
		t.Fatalf("%s: %s: %s", tool, code, out)
	}
	return out
}

// try calls a tool and returns its text and its error code ("" on success).
func (r *rig) try(t *testing.T, tool string, args map[string]any) (string, events.Code) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if args == nil {
		args = map[string]any{}
	}
	res, err := r.session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if !res.IsError {
		return text.String(), ""
	}
	var sc struct {
		Error struct {
			Code events.Code `json:"code"`
		} `json:"error"`
	}
	b, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(b, &sc)
	if sc.Error.Code == "" {
		sc.Error.Code = "untyped"
	}
	return text.String(), sc.Error.Code
}

// recorded returns the log's events of the given kinds, in order.
func (r *rig) recorded(t *testing.T, kinds ...string) []events.Event {
	t.Helper()
	out, err := exec.Command(tbBin, "--data", r.data, "tail", "--json", "--from", "1", "-n", "1000000").Output()
	if err != nil {
		t.Fatalf("tail: %v", err)
	}
	var evs []events.Event
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var e events.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("tail line: %v: %s", err, sc.Text())
		}
		for _, k := range kinds {
			if e.Kind == k {
				evs = append(evs, e)
			}
		}
	}
	return evs
}

func (r *rig) read(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.ws, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// proposal is what propose_text_edit answers.
type proposal struct {
	ProposalID  string `json:"proposalId"`
	ContentHash string `json:"contentHash"`
}

func parse[T any](t *testing.T, text string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%v: %s", err, text)
	}
	return v
}
