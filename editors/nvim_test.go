package editors

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

// nvim is a headless Neovim with the plugin, driven over its RPC socket
// with `nvim --server`.
type nvim struct {
	sock string
	cmd  *exec.Cmd
	log  *testenv.Buffer
}

func startNvim(t *testing.T, r *rig, file string) *nvim {
	t.Helper()
	bin, err := exec.LookPath("nvim")
	if err != nil {
		t.Fatal("nvim is not installed: make test installs Debian's neovim (.ci/deps); or apt-get install neovim")
	}
	plugin, err := filepath.Abs("nvim")
	if err != nil {
		t.Fatal(err)
	}
	n := &nvim{sock: filepath.Join(filepath.Dir(r.ws), "nvim.sock"), log: &testenv.Buffer{}}
	n.cmd = exec.Command(bin, "--headless", "-u", "NONE", "-i", "NONE", "-n", "--listen", n.sock,
		"--cmd", "set rtp^="+plugin, "--cmd", "runtime plugin/tracebridge.lua",
		"-c", "lua require('tracebridge').setup({data_dir = [["+r.data+"]], debounce_ms = 20})", file)
	n.cmd.Dir = r.ws
	home := t.TempDir()
	n.cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "XDG_STATE_HOME="+home, "XDG_DATA_HOME="+home)
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		n.cmd.Process.Kill()
		n.cmd.Wait()
		if t.Failed() {
			t.Logf("nvim output:\n%s", n.log)
		}
	})
	eventually(t, 10*time.Second, "nvim's RPC socket", func() bool { _, err := os.Stat(n.sock); return err == nil })
	eventually(t, 10*time.Second, "the plugin attached to the host", func() bool {
		return n.lua(t, "tostring(require('tracebridge').status().attached)") == "true"
	})
	return n
}

// lua evaluates a Lua expression in Neovim and returns it as text (one
// line: nvim --remote-expr does not print newlines faithfully).
func (n *nvim) lua(t *testing.T, expr string) string {
	t.Helper()
	quoted := "'" + strings.ReplaceAll(expr, "'", "''") + "'"
	out, err := exec.Command("nvim", "--server", n.sock, "--remote-expr", "luaeval("+quoted+")").CombinedOutput()
	if err != nil {
		t.Fatalf("nvim --remote-expr %s: %v %s", expr, err, out)
	}
	return strings.TrimSpace(string(out))
}

// keys types keys as a user does.
func (n *nvim) keys(t *testing.T, keys string) {
	t.Helper()
	if out, err := exec.Command("nvim", "--server", n.sock, "--remote-send", keys).CombinedOutput(); err != nil {
		t.Fatalf("nvim --remote-send %s: %v %s", keys, err, out)
	}
}

func (n *nvim) waitLua(t *testing.T, what, expr, want string) {
	t.Helper()
	var got string
	eventually(t, 10*time.Second, what+" (last: "+expr+" = "+got+")", func() bool {
		got = n.lua(t, expr)
		return got == want
	})
}

const goFile = "package a\n\nfunc A() int { return 1 }\n"

// The Neovim plugin, headless, as its user and an AI client meet it: the
// buffer's unsaved text and selection reach get_active_document and
// get_selection; vim.diagnostic's diagnostics reach get_diagnostics; a
// presented review lands in a buffer with its references in the quickfix
// list; a proposal is approved from its diff buffer and applied to the
// unsaved buffer as one undoable change; unsaved work is never written
// over.
func TestNeovim(t *testing.T) {
	long(t)
	r := newRig(t, map[string]string{"go.mod": "module a\n", "a.go": goFile, "b.go": "package a\n\nvar B = 1\n"})
	r.client(t)
	n := startNvim(t, r, "a.go")

	// Type without saving, then select "return 42".
	n.keys(t, ":3<CR>ccfunc A() int { return 42 }<Esc>0frvee<Esc>")
	var sel struct {
		Path string `json:"path"`
		Text string `json:"text"`
	}
	eventually(t, 10*time.Second, "get_selection answers from the buffer", func() bool {
		sel = parse[struct {
			Path string `json:"path"`
			Text string `json:"text"`
		}](t, nullAsEmpty(r.call(t, "get_selection", nil)))
		return sel.Text == "return 42"
	})
	doc := parse[struct {
		Path, Content, Language string
		Unsaved                 bool
	}](t, r.call(t, "get_active_document", nil))
	if doc.Path != "a.go" || doc.Content != "package a\n\nfunc A() int { return 42 }\n" || !doc.Unsaved || doc.Language != "go" {
		t.Fatalf("get_active_document: %+v", doc)
	}
	if r.read(t, "a.go") != goFile {
		t.Fatal("the unsaved text reached the disk")
	}

	// The editor's diagnostics, 1-based.
	n.lua(t, `vim.diagnostic.set(vim.api.nvim_create_namespace('test'), 0, {{lnum = 2, col = 22, end_lnum = 2, end_col = 24, severity = vim.diagnostic.severity.ERROR, source = 'gotype', code = 'E1', message = 'cannot use 42'}}) or 'ok'`)
	eventually(t, 10*time.Second, "get_diagnostics answers the editor's", func() bool {
		return strings.Contains(r.call(t, "get_diagnostics", nil), `{"file":"a.go","line":3,"column":23,"endLine":3,"endColumn":25,"severity":"error","source":"gotype","code":"E1","message":"cannot use 42"}`)
	})

	// A review: in a buffer, its references in the quickfix list (the
	// broken one marked); :cc lands on the line.
	r.call(t, "present_review", map[string]any{"content": "# Review\n\nChanged [a.go:3][]; see also [gone.go:1][].\n"})
	n.waitLua(t, "the review buffer", `table.concat(vim.api.nvim_buf_get_lines(require('tracebridge').status().review_buf or 0, 0, -1, false), '|')`, "# Review||Changed [a.go:3][]; see also [gone.go:1][].|")
	n.waitLua(t, "the quickfix list", `#vim.fn.getqflist()`, "2")
	if broken := n.lua(t, `vim.fn.getqflist()[2].text`); !strings.Contains(broken, "[gone.go:1][]  [broken: ") {
		t.Fatalf("the broken reference is not marked: %q", broken)
	}
	n.keys(t, ":cc 1<CR>")
	n.waitLua(t, ":cc 1 lands on the line", `vim.fn.expand('%:t') .. ':' .. vim.fn.line('.')`, "a.go:3")

	// A proposal against the unsaved text, approved in Neovim.
	p := parse[proposal](t, r.call(t, "propose_text_edit", map[string]any{"path": "a.go", "original": "return 42", "replacement": "return 43"}))
	n.waitLua(t, "the plugin knows the pending proposal", `table.concat(require('tracebridge').status().pending, ',')`, p.ProposalID)
	n.keys(t, ":TracebridgeProposal<CR>")
	n.waitLua(t, "the proposal's diff buffer", `vim.fn.bufname()`, "tracebridge://proposal/"+p.ProposalID)
	if diff := n.lua(t, `table.concat(vim.api.nvim_buf_get_lines(0, 0, -1, false), '|')`); !strings.Contains(diff, "|+func A() int { return 43 }|") {
		t.Fatalf("the diff buffer: %s", diff)
	}
	// The user's last selection in a.go was "func" on line 3 (Neovim moves
	// it to line 1 when the whole text is replaced).
	n.lua(t, `vim.api.nvim_buf_set_mark(vim.fn.bufnr('a.go'), '<', 3, 0, {}) and vim.api.nvim_buf_set_mark(vim.fn.bufnr('a.go'), '>', 3, 3, {}) and 'ok'`)
	n.keys(t, "ga")
	n.waitLua(t, "the buffer holds the edit", `vim.api.nvim_buf_get_lines(vim.fn.bufnr('a.go'), 2, 3, false)[1]`, "func A() int { return 43 }")
	if r.read(t, "a.go") != goFile {
		t.Fatal("the approved edit of an unsaved buffer was written to disk")
	}
	// Seed 154: the edit replaced the text the selection was in; what the
	// marks point at now is not a selection the user made.
	n.keys(t, ":buffer a.go<CR>")
	eventually(t, 10*time.Second, "no selection after the approved edit", func() bool {
		return nullAsEmpty(r.call(t, "get_selection", nil)) == "{}" && strings.Contains(r.call(t, "get_active_document", nil), "return 43")
	})
	// Twin: one the user makes afterwards is reported.
	n.keys(t, "gg0vee<Esc>")
	eventually(t, 10*time.Second, "a new selection is reported", func() bool {
		return strings.Contains(r.call(t, "get_selection", nil), `"text":"package a"`)
	})
	// One undoable change: u takes it back, CTRL-R brings it again.
	n.keys(t, ":buffer a.go<CR>u")
	n.waitLua(t, "u undoes the applied edit", `vim.api.nvim_buf_get_lines(0, 2, 3, false)[1]`, "func A() int { return 42 }")
	n.keys(t, "<C-r>:w<CR>")
	eventually(t, 10*time.Second, "the saved file holds the edit", func() bool { return r.read(t, "a.go") == "package a\n\nfunc A() int { return 43 }\n" })

	decided := r.recorded(t, events.KindProposalApproved, events.KindProposalApplied, events.KindEditorRequestSent, events.KindEditorResponseReceived)
	if len(decided) != 4 || decided[0].Attrs.Get("by") != "nvim" || decided[3].Attrs.Get("via") != "editor" || decided[2].Outcome != events.OK {
		t.Fatalf("the decision and the apply path in the log: %v", decided)
	}

	// Made against the disk, then the user types in the file without
	// saving: the approval is refused (Drift), the unsaved text stays.
	p = parse[proposal](t, r.call(t, "propose_text_edit", map[string]any{"path": "b.go", "original": "B = 1", "replacement": "B = 2"}))
	n.keys(t, ":edit b.go<CR>:3<CR>ccvar B = 7 // mine<Esc>")
	eventually(t, 10*time.Second, "the host knows b.go's unsaved text", func() bool {
		return strings.Contains(r.call(t, "get_active_document", nil), "mine")
	})
	n.keys(t, ":TracebridgeApprove "+p.ProposalID+"<CR>")
	eventually(t, 10*time.Second, "the proposal failed with Drift", func() bool {
		for _, e := range r.recorded(t, events.KindProposalFailed) {
			if e.Attrs.Get(events.AttrProposal) == p.ProposalID && e.Code == events.CodeDrift {
				return true
			}
		}
		return false
	})
	if r.read(t, "b.go") != "package a\n\nvar B = 1\n" {
		t.Fatal("b.go was written")
	}
	if got := n.lua(t, `vim.api.nvim_buf_get_lines(vim.fn.bufnr('b.go'), 2, 3, false)[1]`); got != "var B = 7 // mine" {
		t.Fatalf("the unsaved text changed: %q", got)
	}

	// A new file, with the AI's description; skipped (it stays pending),
	// then approved.
	p = parse[proposal](t, r.call(t, "propose_text_edit", map[string]any{"path": "c.go", "original": "", "replacement": "package a\n\nvar C = 3\n", "description": "a constant the tests need"}))
	n.keys(t, ":TracebridgeProposal "+p.ProposalID+"<CR>")
	n.waitLua(t, "the new file's diff buffer", `vim.fn.bufname()`, "tracebridge://proposal/"+p.ProposalID)
	if head := n.lua(t, `table.concat(vim.api.nvim_buf_get_lines(0, 0, 3, false), '|')`); !strings.Contains(head, "# a constant the tests need") {
		t.Fatalf("the description is not shown: %s", head)
	}
	n.keys(t, "gs")
	eventually(t, 10*time.Second, "the deferral is recorded", func() bool {
		d := r.recorded(t, events.KindProposalDeferred)
		return len(d) == 1 && d[0].Attrs.Get("by") == "nvim"
	})
	n.keys(t, ":TracebridgeApprove<CR>")
	eventually(t, 10*time.Second, "c.go created", func() bool {
		b, err := os.ReadFile(filepath.Join(r.ws, "c.go"))
		return err == nil && string(b) == "package a\n\nvar C = 3\n"
	})
}

// nullAsEmpty turns the tool's null (nothing selected) into an empty
// object.
func nullAsEmpty(s string) string {
	if s == "null" || s == "" {
		return "{}"
	}
	return s
}
