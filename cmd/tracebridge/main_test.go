package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// tbBin is the real tracebridge binary, built once for the package's tests;
// tbTestBin is the same with the misbehaving test tools (-tags
// tb_testtools). Both are built without -race so child processes run at
// production speed.
var tbBin, tbTestBin string

func TestMain(m *testing.M) {
	if side := os.Getenv("TB_GUARD_UPSTREAM"); side != "" {
		runGuardUpstream(side) // a hostile (or harmless) upstream of the guard corpus
		return
	}
	if os.Getenv("TB_FAULT_UPSTREAM") == "1" {
		runFaultUpstream() // an upstream MCP server of the gateway tests, re-executed from this test binary
		return
	}
	if os.Getenv("TB_CONFORMANCE_CLIENT") == "1" {
		os.Exit(runConformanceClient()) // the AI client behind tracebridge in the suite's client scenarios
	}
	if os.Getenv("TB_BARE_MCP_SERVER") == "1" {
		runBareServer() // the baseline of BenchmarkToolCall, re-executed from this test binary
		return
	}
	tmp, err := os.MkdirTemp("", "tracebridge-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tbBin = filepath.Join(tmp, "tracebridge")
	tbTestBin = filepath.Join(tmp, "tracebridge-testtools")
	err = buildBinary(tbBin)
	if err == nil {
		err = buildBinary(tbTestBin, "tb_testtools")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(tmp)
	os.Exit(code)
}

func buildBinary(out string, tags ...string) error {
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", tags[0])
	}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %v: %v\n%s", args, err, b)
	}
	return nil
}

// proc is a running tracebridge child process.
type proc struct {
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	mu     sync.Mutex
	lines  []string
	first  chan struct{} // closed at the first stdout line
	eof    chan struct{} // closed when stdout is drained
}

// start runs the binary bin with args on data dir data, collecting stdout
// lines. The process is killed when the test ends if it still runs.
func start(t testing.TB, bin, data string, args ...string) *proc {
	t.Helper()
	p := &proc{stderr: &bytes.Buffer{}, first: make(chan struct{}), eof: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"--data", data, "--log-level", "warn"}, args...)...)
	p.cmd.Stderr = &syncWriter{w: p.stderr, mu: &p.mu}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.eof)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			once.Do(func() { close(p.first) })
		}
		io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// wait waits for the process to exit within d and returns its exit code.
func (p *proc) wait(t *testing.T, d time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { <-p.eof; done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(d):
		p.cmd.Process.Kill()
		<-done
		t.Fatalf("%v did not exit within %v (it hung); stderr:\n%s", p.cmd.Args, d, p.stderrText())
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) output() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

func (p *proc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

type syncWriter struct {
	w  io.Writer
	mu *sync.Mutex
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}

// ackedIDs parses the id lines `loadgen --acks` printed.
func ackedIDs(t *testing.T, lines []string) []events.ID {
	t.Helper()
	var ids []events.ID
	for _, l := range lines {
		id, err := events.ParseID(l)
		if err != nil {
			t.Fatalf("loadgen printed a line that is not an id: %q", l)
		}
		ids = append(ids, id)
	}
	return ids
}

// readStore opens the store of data (no process may hold it) read-only
// until the test ends.
func readStore(t *testing.T, data string) *store.Store {
	t.Helper()
	st, err := store.Open(filepath.Join(data, "events.db"), store.Options{ReadOnly: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// checkStored opens the (closed) store of data and returns the acked ids it
// does not hold.
func checkStored(t *testing.T, data string, ids []events.ID) (missing []events.ID) {
	t.Helper()
	st := readStore(t, data)
	defer st.Close() // now: callers (the crash loop) start the next process on this store
	missing, err := st.Missing(ids)
	if err != nil {
		t.Fatal(err)
	}
	return missing
}

// verifyStore runs the real `tracebridge verify` on data and fails the test
// unless it exits 0.
func verifyStore(t *testing.T, data string) string {
	t.Helper()
	cmd := exec.Command(tbBin, "--data", data, "verify")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	return string(out)
}

// eventually polls cond every 10ms until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("timed out after %v waiting for %s", d, what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// long marks a test `make unit` (go test -short) leaves to `make test`:
// the crash loops, the browser and the recorded sessions.
func long(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("long test: `make test` runs it")
	}
}
