package editors

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// otherUsersSocket serves a Unix socket as uid 65534 (another local user)
// in a directory of that user's, and returns its path and the file the
// listener writes what it receives to. Needs root for setpriv, as CI runs.
func otherUsersSocket(t *testing.T) (sock, got string) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root to serve a socket as another uid (CI runs as root)")
	}
	base, err := os.MkdirTemp("", "tbo") // short: socket paths have a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o755)
	dir := filepath.Join(base, "share")
	os.Mkdir(dir, 0o700)
	if err := os.Chown(dir, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	sock, got = filepath.Join(dir, "host.sock"), filepath.Join(dir, "got")
	listener := `import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4)
while True:
    c, _ = s.accept()
    open(sys.argv[2], "a").write("connected\n")
    data = c.recv(65536)
    open(sys.argv[2], "a").write(data.decode(errors="replace"))
`
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", listener, sock, got)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	eventually(t, 10*time.Second, "the other user's socket", func() bool { _, err := os.Stat(sock); return err == nil })
	return sock, got
}

// ownSocket serves a Unix socket as this user in a 0700 directory and
// returns its path and what it received so far.
func ownSocket(t *testing.T) (string, func() string) {
	t.Helper()
	base, err := os.MkdirTemp("", "tbs")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	os.Chmod(base, 0o700)
	sock := filepath.Join(base, "host.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	got := make(chan string, 16)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b := make([]byte, 65536)
			n, _ := c.Read(b)
			got <- string(b[:n])
			c.Close()
		}
	}()
	var seen strings.Builder
	return sock, func() string {
		for {
			select {
			case s := <-got:
				seen.WriteString(s)
			default:
				return seen.String()
			}
		}
	}
}

// F-E7: the Neovim plugin attaches only to a socket this user owns in a
// directory only this user can enter: $TRACEBRIDGE_HOST naming another
// user's socket gets nothing sent to it, and the plugin says why. The twin:
// the same plugin with the user's own socket sends editor.attach.
func TestNeovimRefusesAnotherUsersSocket(t *testing.T) {
	long(t)
	sock, got := otherUsersSocket(t)
	own, ownGot := ownSocket(t)
	plugin, _ := filepath.Abs("nvim")
	try := func(socket string) string {
		t.Helper()
		cmd := exec.Command("nvim", "--headless", "-u", "NONE", "-i", "NONE", "-n", "--cmd", "set rtp^="+plugin, "--cmd", "runtime plugin/tracebridge.lua",
			"-c", "lua require('tracebridge').setup({retry_ms = 60000}); require('tracebridge').connect()",
			"-c", "lua vim.wait(1500, function() return false end); io.stdout:write('LAST=' .. tostring(require('tracebridge').status().last_error) .. '\\n')",
			"-c", "qa!", filepath.Join(t.TempDir(), "notes.txt"))
		home := t.TempDir()
		cmd.Env = append(os.Environ(), "TRACEBRIDGE_HOST="+socket, "HOME="+home, "XDG_STATE_HOME="+home, "XDG_CONFIG_HOME="+home)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("nvim: %v\n%s", err, out)
		}
		return string(out)
	}
	out := try(sock)
	if !strings.Contains(out, "belongs to uid 65534") {
		t.Fatalf("the plugin did not say why it refused:\n%s", out)
	}
	if b, _ := os.ReadFile(got); len(b) > 0 {
		t.Fatalf("the other user's socket received: %s", b)
	}
	try(own)
	if s := ownGot(); !strings.Contains(s, "editor.attach") {
		t.Fatalf("the user's own socket received %q, want editor.attach", s)
	}
}

// F-E7 for VS Code: the extension's connection code refuses another user's
// socket (what a repository's .vscode/settings.json could name, were the
// setting not machine-scoped, as it now is) and attaches to the user's own.
func TestVSCodeExtensionRefusesAnotherUsersSocket(t *testing.T) {
	long(t)
	var pkg struct {
		Contributes struct {
			Configuration struct {
				Properties map[string]struct {
					Scope string `json:"scope"`
				} `json:"properties"`
			} `json:"configuration"`
		} `json:"contributes"`
	}
	b, err := os.ReadFile(filepath.Join("vscode", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if s := pkg.Contributes.Configuration.Properties["tracebridge.socket"].Scope; s != "machine" {
		t.Fatalf("tracebridge.socket has scope %q: a workspace's settings could name a socket", s)
	}
	dir, _ := filepath.Abs("vscode")
	compile := exec.Command(filepath.Join(dir, "node_modules", ".bin", "tsc"), "-p", ".")
	compile.Dir = dir
	if out, err := compile.CombinedOutput(); err != nil {
		t.Fatalf("tsc: %v\n%s", err, out)
	}
	sock, got := otherUsersSocket(t)
	own, ownGot := ownSocket(t)
	script := `const { HostConnection } = require(process.argv[1]);
let said = '';
const c = new HostConnection(() => ({ socket: process.argv[2] }), { editor: 'vscode', version: 'test' },
  { notify() {}, request: async () => null, state(attached, detail) { said = detail; } }, () => {});
c.connect();
setTimeout(() => { console.log('STATE=' + said); process.exit(0); }, 1000);`
	try := func(socket string) string {
		t.Helper()
		out, err := exec.Command("node", "-e", script, filepath.Join(dir, "out", "host.js"), socket).CombinedOutput()
		if err != nil {
			t.Fatalf("node: %v\n%s", err, out)
		}
		return string(out)
	}
	if out := try(sock); !strings.Contains(out, "belongs to uid 65534") {
		t.Fatalf("the extension did not refuse the other user's socket: %s", out)
	}
	if b, _ := os.ReadFile(got); len(b) > 0 {
		t.Fatalf("the other user's socket received: %s", b)
	}
	try(own)
	if s := ownGot(); !strings.Contains(s, "editor.attach") {
		t.Fatalf("the user's own socket received %q, want editor.attach", s)
	}
}
