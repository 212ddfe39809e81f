package config

import (
	"strings"
	"testing"
)

// Unknown names what a file gives that nothing served matches; a
// configured server's tools and, with prefix = false, any name count as
// served.
func TestUnknownNamesWhatMatchesNothing(t *testing.T) {
	served := Served{Tools: map[string]bool{"regex_text_search": true, "bm25_text_search": true}, Capabilities: map[string]bool{"trace.read": true}}
	c, err := Parse("tb.toml", []byte(`
[policy]
grant = ["trace.read", "fs.everything"]
deny = ["bm25_*", "nothing_*", "fs__write_file"]
[tools.regex_text_search]
[tools.no_such_tool]
[tools.fs__read_file]
[servers.fs]
command = "server-filesystem"
`))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.Unknown("tb.toml", served), "\n")
	for _, want := range []string{`policy.grant: "fs.everything" is not a capability (known: trace.read)`, `policy.deny: "nothing_*" matches no tool`, `[tools.no_such_tool]: not a tool`} {
		if !strings.Contains(got, "tb.toml: "+want) {
			t.Errorf("missing %q in:\n%s", want, got)
		}
	}
	if n := len(c.Unknown("tb.toml", served)); n != 3 {
		t.Errorf("%d problems, want 3 (bm25_*, fs__write_file, regex_text_search and fs__read_file are served):\n%s", n, got)
	}
	c.Servers["fs"] = Server{Command: "server-filesystem", Prefix: new(false)}
	if got := c.Unknown("tb.toml", served); len(got) != 1 {
		t.Errorf("with an unprefixed server any tool name may be served; left: %q", got)
	}
}

// Warnings name a credential in a server's URL or argv, not the server's
// other fields.
func TestWarningsNameCredentialsInURLAndArgv(t *testing.T) {
	c, err := Parse("tb.toml", []byte(`
[servers.api]
url = "https://api.example.com/mcp?token=abc123"
[servers.cli]
command = "tool"
args = ["--api-key", "sk-123456", "--verbose"]
[servers.clean]
command = "tool"
args = ["--verbose"]
`))
	if err != nil {
		t.Fatal(err)
	}
	w := c.Warnings()
	if len(w) != 2 || !strings.HasPrefix(w[0], "servers.api.url") || !strings.HasPrefix(w[1], "servers.cli.args") || strings.Contains(strings.Join(w, ""), "abc123") {
		t.Fatalf("warnings: %q", w)
	}
}
