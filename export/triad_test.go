package export

import (
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/replay"
)

// A triad written from a live log names the machine, the branch and the
// commit; a deterministic one (a recorded session's) names none of them.
func TestTriadMetadataNamesWhereItWasWritten(t *testing.T) {
	root := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "work"}, {"-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", append([]string{"-C", root}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	run := replay.Judge(events.NewID(), nil)
	for _, deterministic := range []bool{false, true} {
		tr, err := WriteTriad(root, run, TriadOptions{Slug: "t", Version: "test", Deterministic: deterministic})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(tr.Metadata)
		var md Metadata
		json.Unmarshal(b, &md)
		host, _ := os.Hostname()
		switch {
		case !deterministic && (md.Git == nil || md.Git.Branch != "work" || len(md.Git.Commit) < 7 || md.Host != host):
			t.Errorf("live triad: git %+v host %q", md.Git, md.Host)
		case deterministic && (md.Git != nil || md.Host != ""):
			t.Errorf("deterministic triad names git %+v host %q", md.Git, md.Host)
		}
	}
}
