package confine_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/internal/confine"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

// The test binary is also the confined program: started through the
// trampoline with CONFINE_TRY set, it tries that one access and says how
// it went.
func TestMain(m *testing.M) {
	if try := os.Getenv("CONFINE_TRY"); try != "" {
		fmt.Print(attempt(try))
		os.Exit(0)
	}
	if os.Getenv("CONFINE_PARENT") == "1" {
		os.Exit(parent())
	}
	os.Exit(m.Run())
}

// parent is a bridge whose binary is removed while it runs: once told (a
// line on stdin), it starts a confined child and prints what it said.
func parent() int {
	bufio.NewReader(os.Stdin).ReadString('\n')
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = []string{"CONFINE_TRY=read:/etc/passwd"}
	if err := confine.Wrap(cmd, confine.Plan(confine.Request{Exec: "/proc/self/exe", State: os.TempDir(), Tmp: os.TempDir(), Net: confine.NetAny})); err != nil {
		fmt.Print(err)
		return 1
	}
	out, err := cmd.CombinedOutput()
	fmt.Printf("%s %v", out, err)
	return 0
}

func attempt(try string) string {
	verb, arg, _ := strings.Cut(try, ":")
	var err error
	switch verb {
	case "read":
		_, err = os.ReadFile(arg)
	case "write":
		err = os.WriteFile(arg, []byte("x"), 0o600)
	case "connect":
		var c net.Conn
		if c, err = net.Dial("tcp", arg); err == nil {
			c.Close()
		}
	}
	if err != nil {
		return "refused: " + err.Error()
	}
	return "ok"
}

// world is a home with a private key, a client's root, another client's
// root, and a listener on two loopback ports.
type world struct {
	home, root, other, state, tmp string
	given, notGiven               string
}

func newWorld(t *testing.T) world {
	dir := t.TempDir()
	w := world{home: filepath.Join(dir, "home"), root: filepath.Join(dir, "root"), other: filepath.Join(dir, "other"),
		state: filepath.Join(dir, "state"), tmp: filepath.Join(dir, "tmp")}
	for _, d := range []string{filepath.Join(w.home, ".ssh"), w.root, w.other, w.state, w.tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(w.home, ".ssh", "id_rsa"), filepath.Join(w.other, "notes.txt"), filepath.Join(w.root, "notes.txt")} {
		if err := os.WriteFile(f, []byte("secret\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w.given, w.notGiven = testenv.Listener(t), testenv.Listener(t)
	return w
}

func (w world) spec(t *testing.T, exe string) confine.Spec {
	_, p, _ := net.SplitHostPort(w.given)
	port, _ := strconv.Atoi(p)
	return confine.Plan(confine.Request{Exec: exe, Roots: []string{w.root}, State: w.state, Tmp: w.tmp, Home: w.home,
		Net: confine.NetPorts, Ports: []uint16{uint16(port)}})
}

// run starts the test binary trying try, confined by spec unless nil.
func run(t *testing.T, spec *confine.Spec, try string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = []string{"CONFINE_TRY=" + try}
	if spec != nil {
		spec.Exec = exe
		if err := confine.Wrap(cmd, *spec); err != nil {
			t.Fatal(err)
		}
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", try, err, out)
	}
	return string(out)
}

// TestKernelRefusesWhatThePlanDoesNotGrant: each access a hostile server
// would try is refused by the kernel under the plan, and allowed to the
// same program unconfined (so the confinement is what stops it); each
// harmless twin is allowed confined.
func TestKernelRefusesWhatThePlanDoesNotGrant(t *testing.T) {
	if confine.ABI() < 4 {
		t.Fatalf("Landlock ABI %d on this kernel: confinement (and its network rules) needs ABI 4 or later", confine.ABI())
	}
	w := newWorld(t)
	exe, _ := os.Executable()
	spec := w.spec(t, exe)
	for _, c := range []struct {
		try     string
		refused bool
	}{
		{"read:/etc/shadow", true},
		{"read:" + filepath.Join(w.home, ".ssh", "id_rsa"), true},
		{"read:" + filepath.Join(w.other, "notes.txt"), true},
		{"write:" + filepath.Join(w.other, "new.txt"), true},
		{"write:" + filepath.Join(filepath.Dir(w.root), "beside.txt"), true},
		{"connect:" + w.notGiven, true},
		// Twins: what the server was given.
		{"read:/etc/passwd", false},
		{"read:" + filepath.Join(w.root, "notes.txt"), false},
		{"write:" + filepath.Join(w.root, "new.txt"), false},
		{"write:" + filepath.Join(w.state, "kept.json"), false},
		{"write:" + filepath.Join(w.tmp, "scratch"), false},
		{"connect:" + w.given, false},
	} {
		s := spec
		got := run(t, &s, c.try)
		if refused := strings.HasPrefix(got, "refused:"); refused != c.refused {
			t.Errorf("confined %s: %s (want refused=%v)", c.try, got, c.refused)
		}
		if c.refused && !strings.Contains(got, "permission denied") {
			t.Errorf("confined %s: %s, want the kernel's permission denied", c.try, got)
		}
		if got := run(t, nil, c.try); got != "ok" {
			t.Errorf("unconfined %s: %s: the test's world does not allow it at all, so the confinement proves nothing", c.try, got)
		}
	}
}

// TestNetworkNoneAndAny: none refuses every TCP connect, any none.
func TestNetworkNoneAndAny(t *testing.T) {
	w := newWorld(t)
	exe, _ := os.Executable()
	none := confine.Plan(confine.Request{Exec: exe, State: w.state, Tmp: w.tmp, Home: w.home, Net: confine.NetNone})
	if got := run(t, &none, "connect:"+w.given); !strings.HasPrefix(got, "refused:") {
		t.Errorf("network none: %s", got)
	}
	anyNet := confine.Plan(confine.Request{Exec: exe, State: w.state, Tmp: w.tmp, Home: w.home, Net: confine.NetAny})
	if got := run(t, &anyNet, "connect:"+w.notGiven); got != "ok" {
		t.Errorf("network any: %s", got)
	}
}

// TestATrampolineThatCannotConfineDoesNotRun: a plan the kernel cannot
// take stops the start (exit 126, saying why) rather than running the
// server unconfined.
func TestATrampolineThatCannotConfineDoesNotRun(t *testing.T) {
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = []string{"CONFINE_TRY=read:/etc/shadow"}
	if err := confine.Wrap(cmd, confine.Spec{Exec: exe, Net: confine.NetAny}); err != nil {
		t.Fatal(err)
	}
	cmd.Env = append(cmd.Env[:1], confine.EnvSpec+"={not json")
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 126 || !strings.Contains(string(out), "confinement failed") || !strings.HasPrefix(string(out), "tracebridge: ") {
		t.Fatalf("err %v, output %q: want exit 126 saying the confinement failed, and no access", err, out)
	}
}

// A bridge whose binary was replaced or removed while it runs (an upgrade)
// still starts confined servers: the trampoline is its own running image.
func TestABridgeWhoseBinaryWasRemovedStillConfines(t *testing.T) {
	self, _ := os.Executable()
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(t.TempDir(), "bridge")
	if err := os.WriteFile(copyPath, b, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(copyPath)
	cmd.Env = []string{"CONFINE_PARENT=1"}
	in, _ := cmd.StdinPipe()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(copyPath); err != nil {
		t.Fatal(err)
	}
	in.Write([]byte("go\n"))
	in.Close()
	cmd.Wait()
	if !strings.HasPrefix(out.String(), "ok") {
		t.Fatalf("the confined child of a bridge whose binary is gone: %q", out.String())
	}
}
