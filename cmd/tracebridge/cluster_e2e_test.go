package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub/clustertest"
)

// With the whole cluster down a bridge refuses side-effecting calls
// (LogUnavailable, the tool never runs) and read-only ones follow policy;
// once the cluster is back the same bridge goes on without a restart, and a
// collector on another data dir holds every run that was answered.
func TestClusterDownFailsClosedAndRecovers(t *testing.T) {
	long(t)
	c := clustertest.Start(t, clustertest.Options{Nodes: 3})
	collectorData := filepath.Join(t.TempDir(), "collector")
	collector := start(t, tbBin, collectorData, "--nats-url", c.URL(), "serve")
	defer collector.cmd.Process.Kill()
	data := filepath.Join(t.TempDir(), "data")
	b := startBridge(t, tbTestBin, data, "2025-06-18",
		writeConfig(t, "[approval]\nmode = \"allow\"\n[policy]\ngrant = [\"text.search\", \"workspace.write\"]\n"),
		"TRACEBRIDGE_NATS_URL="+c.URL())
	dir := t.TempDir()
	var answered []events.ID
	logged := map[string]int{}
	write := func(name string) events.Code {
		res, req, code := b.call(t, "test_write", map[string]any{"marker": filepath.Join(dir, name)})
		if code == "" {
			answered = append(answered, req)
		} else if logged[name]++; logged[name] == 1 {
			t.Logf("test_write %s: %s %s", name, code, textOf(res))
		}
		return code
	}
	if code := write("before"); code != "" {
		t.Fatalf("with the cluster up: %s", code)
	}
	for _, n := range c.Nodes {
		c.Kill(n)
	}
	if code := write("down"); code != events.CodeLogUnavailable {
		t.Fatalf("a side-effecting call with the cluster down: %q, want LogUnavailable", code)
	}
	if _, err := os.Stat(filepath.Join(dir, "down")); !os.IsNotExist(err) {
		t.Fatal("the tool ran though its evidence could not be made durable")
	}
	if _, _, code := b.call(t, "regex_text_search", map[string]any{"query": "a", "text": "a"}); code != "" {
		t.Fatalf("a read-only call with the cluster down (policy lets it run): %q", code)
	}
	for _, n := range c.Nodes {
		c.StartNode(n)
	}
	eventually(t, 60*time.Second, "a side-effecting call succeeds once the cluster is back", func() bool {
		return write("after") == ""
	})
	b.close(t)

	// The collector holds every answered run, closed.
	for _, req := range answered {
		eventually(t, 30*time.Second, "the collector holds run "+req.String(), func() bool {
			return exec.Command(tbBin, "--data", collectorData, "replay", req.String(), "--exit-code").Run() == nil
		})
	}
}

// A bridge on one machine waits for an approval; an operator decides it
// through another machine's collector; the decision travels through the
// stream and releases the call.
func TestClusterApprovalDecidedOnAnotherCollector(t *testing.T) {
	long(t)
	c := clustertest.Start(t, clustertest.Options{Nodes: 3})
	dataA, dataB := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	collectorA := start(t, tbBin, dataA, "--nats-url", c.URL(), "--nats-user", "alice", "serve")
	defer collectorA.cmd.Process.Kill()
	// The same operator on another machine: a decision counts only from the
	// member whose call asked (another member's is not taken: F-C2,
	// bridge/executor's TestDecisionComesFromTheAskingMember).
	collectorB := start(t, tbBin, dataB, "--nats-url", c.URL(), "--nats-user", "alice", "--nats-machine", "machine-b", "serve")
	defer collectorB.cmd.Process.Kill()
	for _, d := range []string{dataA, dataB} {
		eventually(t, 30*time.Second, "the collector of "+d+" serves", func() bool {
			_, err := os.Stat(filepath.Join(d, "hub.json"))
			return err == nil
		})
	}
	marker := filepath.Join(t.TempDir(), "ran")
	b := startBridge(t, tbTestBin, dataA, "2025-06-18",
		writeConfig(t, "[approval]\nmode = \"prompt\"\ntimeout = \"60s\"\n[policy]\ngrant = [\"workspace.write\"]\n"),
		"TRACEBRIDGE_NATS_URL="+c.URL(), "TRACEBRIDGE_NATS_USER=alice")
	decided := make(chan string, 1)
	go func() {
		for range 600 {
			out, _ := exec.Command(tbBin, "--data", dataB, "approvals", "list", "--json").Output()
			var pending []struct{ ID, Tool string }
			json.Unmarshal(out, &pending)
			if len(pending) == 1 && pending[0].Tool == "test_write" {
				out, err := exec.Command(tbBin, "--data", dataB, "approvals", "approve", pending[0].ID, "--reason", "fine from B").CombinedOutput()
				decided <- fmt.Sprintf("%s %v", out, err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		decided <- "never saw the pending approval on B"
	}()
	res, req, code := b.call(t, "test_write", map[string]any{"marker": marker})
	t.Logf("decision on B: %s", <-decided)
	if code != "" {
		t.Fatalf("the call approved on B: %s %s", code, textOf(res))
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the approved tool did not run")
	}
	b.close(t)
	for _, d := range []string{dataA, dataB} {
		eventually(t, 30*time.Second, "the run is whole on "+d, func() bool {
			return exec.Command(tbBin, "--data", d, "replay", req.String(), "--exit-code").Run() == nil
		})
	}
}
