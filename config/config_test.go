package config

import (
	"errors"
	"strings"
	"testing"
)

const good = `
# tracebridge.toml
[approval]
mode = "deny"
timeout = "30s"

[policy]
grant = ["text.search"]
deny = ["bm25_text_search"]

[tools.regex_text_search]
approval = "always"
secrets = ["TOKEN"]

[secrets.TOKEN]
env = "MY_TOKEN"

[discovery]
dirs = ["/opt/tools"]
`

func TestParseGoodFile(t *testing.T) {
	c, err := Parse("tb.toml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Approval.Mode != ModeDeny || c.ApprovalTimeout().Seconds() != 30 || c.Policy.Deny[0] != "bm25_text_search" ||
		c.Tools["regex_text_search"].Approval != "always" || c.Secrets["TOKEN"].Env != "MY_TOKEN" || !*c.Policy.ReadOnlyWithoutLog {
		t.Fatalf("parsed %+v", c)
	}
}

func TestDefaultsAreSafe(t *testing.T) {
	c := Default()
	if c.PipeTimeout().Seconds() != 5 {
		t.Fatalf("pipe timeout default %v", c.PipeTimeout())
	}
	if c.Approval.Mode != ModePrompt || c.ApprovalTimeout().Minutes() != 2 {
		t.Fatalf("approval defaults %+v", c.Approval)
	}
	for _, g := range c.Policy.Grant {
		if g == CapWorkspaceWrite || g == CapProcessRun {
			t.Fatalf("default grants include %s", g)
		}
	}
}

func TestProblemsNameTheLine(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"syntax", "[approval]\nmode = \"deny\nx", "tb.toml:2:"},
		{"unknown key", "[approval]\nmode = \"deny\"\ncolour = \"red\"\n", "tb.toml:3: approval.colour: unknown key"},
		{"bad mode", "\n[approval]\nmode = \"sometimes\"\n", `tb.toml:3: approval.mode: "sometimes" is not one of deny, allow, prompt`},
		{"bad timeout", "[approval]\ntimeout = \"soon\"\n", `tb.toml:2: approval.timeout: "soon" is not a positive duration`},
		{"undefined secret", "[tools.x]\nsecrets = [\"NOPE\"]\n", `tb.toml:2: tools.x.secrets: secret "NOPE" is not defined`},
		{"secret source", "[secrets.A]\nenv = \"A\"\nfile = \"/a\"\n", "tb.toml:1: secrets.A: set exactly one of env or file"},
		{"wrong type", "[policy]\ngrant = \"text.search\"\n", "tb.toml:2:"},
		{"bad pipe timeout", "[pipe]\ntimeout = \"-1s\"\n", `tb.toml:2: pipe.timeout: "-1s" is not a positive duration`},
		{"bad cluster url", "[cluster]\nurl = \"localhost:4222\"\n", `tb.toml:2: cluster.url: "localhost:4222" is not a server URL`},
		{"cluster creds and nkey", "[cluster]\nurl = \"nats://a:4222\"\ncreds = \"a\"\nnkey = \"b\"\n", `cluster.nkey: give creds or nkey, not both`},
		{"cluster user token", "[cluster]\nurl = \"nats://a:4222\"\nuser = \"a.b\"\n", `cluster.user: "a.b" must be one subject token`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("tb.toml", []byte(tc.file))
			var pe *ProblemsError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("[approval]\nmode = 1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse("f.toml", b)
		if err == nil && (c.Approval.Mode == "" || c.Policy.ReadOnlyWithoutLog == nil) {
			t.Fatal("a parsed config lacks its defaults")
		}
		var pe *ProblemsError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error is not a ProblemsError: %v", err)
		}
		if err != nil && len(pe.Problems) == 0 {
			t.Fatal("ProblemsError with no problems")
		}
	})
}

// A value of the wrong type is named in the file's words, not Go's.
func TestTypeErrorsReadAsTheFile(t *testing.T) {
	for src, want := range map[string]string{
		"[approval]\ntimeout = 5\n":           "a TOML integer is written here, but the key wants a quoted string",
		"[policy]\ngrant = \"text.search\"\n": "a TOML string is written here, but the key wants a list of strings",
	} {
		_, err := Parse("t.toml", []byte(src))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "struct field") {
			t.Errorf("%q: %v", src, err)
		}
	}
}
