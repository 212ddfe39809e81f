package config

import (
	"errors"
	"strings"
	"testing"
)

const serversFile = `
[secrets.GH]
env = "GITHUB_TOKEN"

[servers.github]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-github"]
env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${secret:GH}" }
deny = ["delete_*"]
read_only = ["search_*"]
approval = { "create_*" = "always", "get_*" = "never" }

[servers.docs]
url = "http://127.0.0.1:3001/mcp"
headers = { Authorization = "Bearer ${secret:GH}" }
start = "eager"
timeout = "5s"
`

func TestServersParse(t *testing.T) {
	c, err := Parse("tb.toml", []byte(serversFile))
	if err != nil {
		t.Fatal(err)
	}
	gh := c.Servers["github"]
	if gh.Command != "npx" || gh.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "${secret:GH}" || gh.Eager() {
		t.Fatalf("github: %+v", gh)
	}
	if gh.Exposes("delete_repo") || !gh.Exposes("create_issue") {
		t.Fatal("deny patterns not applied")
	}
	if gh.ApprovalOf("create_issue") != "always" || gh.ApprovalOf("get_me") != "never" || gh.ApprovalOf("list_x") != "" {
		t.Fatal("approval patterns not applied")
	}
	if !gh.IsReadOnly("search_code") || gh.IsReadOnly("create_issue") {
		t.Fatal("read_only patterns not applied")
	}
	if got := gh.CapabilityOf("github"); got != "upstream.github" {
		t.Fatalf("capability %q", got)
	}
	d := c.Servers["docs"]
	if !d.Eager() || d.RequestTimeout().String() != "5s" || strings.Join(d.ServerSecrets(), ",") != "GH" {
		t.Fatalf("docs: %+v", d)
	}
	if got := ExpandSecrets(d.Headers["Authorization"], func(string) string { return "tok" }); got != "Bearer tok" {
		t.Fatalf("expanded %q", got)
	}
	if caps := c.ServerCapabilities(); strings.Join(caps, ",") != "upstream.docs,upstream.github" {
		t.Fatalf("capabilities %v", caps)
	}
}

func TestServerProblemsNameTheLine(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"neither":        {"[servers.a]\nstart = \"lazy\"\n", "tb.toml:1: servers.a: set command"},
		"both":           {"[servers.a]\ncommand = \"x\"\nurl = \"http://h/mcp\"\n", "tb.toml:1: servers.a: set command or url, not both"},
		"bad name":       {"[servers.a_b]\ncommand = \"x\"\n", "tb.toml:1: servers.a_b: a server's name"},
		"bad url":        {"[servers.a]\nurl = \"ftp://h\"\n", `tb.toml:2: servers.a.url: "ftp://h" is not an http`},
		"url creds":      {"[servers.a]\nurl = \"https://u:p@h/mcp\"\n", "tb.toml:2: servers.a.url: credentials in the URL"},
		"secret in argv": {"[secrets.S]\nenv = \"S\"\n[servers.a]\ncommand = \"x\"\nargs = [\"${secret:S}\"]\n", "tb.toml:5: servers.a.args: a secret in argv"},
		"undefined":      {"[servers.a]\ncommand = \"x\"\nenv = { T = \"${secret:NOPE}\" }\n", `tb.toml:3: servers.a.env: T refers to secret "NOPE"`},
		"start":          {"[servers.a]\ncommand = \"x\"\nstart = \"soon\"\n", `tb.toml:3: servers.a.start: "soon" is not one of lazy, eager`},
		"timeout":        {"[servers.a]\ncommand = \"x\"\ntimeout = \"1\"\n", `tb.toml:3: servers.a.timeout: "1" is not a positive duration`},
		"approval":       {"[servers.a]\ncommand = \"x\"\napproval = { \"x*\" = \"sometimes\" }\n", `servers.a.approval: "x*" = "sometimes": want always or never`},
		"pattern":        {"[servers.a]\ncommand = \"x\"\ndeny = [\"[\"]\n", `tb.toml:3: servers.a.deny: "[" is not a valid pattern`},
		"headers on cmd": {"[servers.a]\ncommand = \"x\"\nheaders = { A = \"b\" }\n", "tb.toml:3: servers.a.headers: headers are for url servers"},
		"env type":       {"[servers.a]\ncommand = \"x\"\nenv = \"A=b\"\n", "tb.toml:3: servers.a.env: a TOML string is written here, but the key wants a table of strings"},
		"builtin cap":    {"[servers.a]\ncommand = \"x\"\ncapability = \"process.run\"\n", `tb.toml:3: servers.a.capability: "process.run" is a built-in capability`},
		"other's cap":    {"[servers.a]\ncommand = \"x\"\ncapability = \"upstream.b\"\n", `tb.toml:3: servers.a.capability: "upstream.b" is another server's capability`},
		"deny pattern":   {"[policy]\ndeny = [\"[\"]\n", `tb.toml:2: policy.deny: "[" is not a tool id or a valid pattern`},
		"inherit glob":   {"[servers.a]\ncommand = \"x\"\ninherit_env = [\"AWS_*\"]\n", `tb.toml:3: servers.a.inherit_env: "AWS_*" is not a variable name`},
		"inherit secret": {"[secrets.S]\nenv = \"S_TOKEN\"\n[servers.a]\ncommand = \"x\"\ninherit_env = [\"S_TOKEN\"]\n", "tb.toml:5: servers.a.inherit_env: S_TOKEN backs a secret this server does not reference"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("tb.toml", []byte(tc.file))
			var pe *ProblemsError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// An upstream inherits the base variables, its inherit_env and nothing
// else: never a variable backing a secret it does not reference, even when
// the base list or its inherit_env names it (G1).
func TestChildEnvIsMinimal(t *testing.T) {
	c, err := Parse("tb.toml", []byte(`
[secrets.GH]
env = "TB_GITHUB_TOKEN"
[secrets.WEIRD]
env = "HOME"
[servers.github]
command = "x"
env = { TOKEN = "${secret:GH}" }
[servers.weather]
command = "x"
inherit_env = ["NODE_OPTIONS"]
`))
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"PATH": "/bin", "HOME": "/home/u", "LANG": "C.UTF-8", "NODE_OPTIONS": "--x",
		"TB_GITHUB_TOKEN": "ghp_canary", "AWS_SECRET_ACCESS_KEY": "aws", "TRACEBRIDGE_DATA": "/d"}
	getenv := func(k string) string { return env[k] }
	got := strings.Join(c.ChildEnv("weather", getenv), " ")
	if got != "PATH=/bin LANG=C.UTF-8 NODE_OPTIONS=--x" {
		t.Fatalf("weather's environment: %s", got)
	}
	if got := strings.Join(c.ChildEnv("github", getenv), " "); got != "PATH=/bin LANG=C.UTF-8" {
		t.Fatalf("github's environment (its secret comes through its own env, resolved): %s", got)
	}
}

// http:// to another host is refused with the fix named; loopback, https
// and allow_plaintext pass; allow_plaintext on a command server is refused.
func TestPlaintextUpstreamIsRefused(t *testing.T) {
	for _, u := range []string{"http://mcp.example.com/mcp", "http://10.0.0.7:8080/mcp", "http://localhost.example.com/"} {
		_, err := Parse("t.toml", []byte("[servers.x]\nurl = \""+u+"\"\n"))
		if err == nil || !strings.Contains(err.Error(), "PlaintextUpstream") || !strings.Contains(err.Error(), "allow_plaintext = true") {
			t.Errorf("%s: %v", u, err)
		}
		if _, err := Parse("t.toml", []byte("[servers.x]\nurl = \""+u+"\"\nallow_plaintext = true\n")); err != nil {
			t.Errorf("%s with allow_plaintext: %v", u, err)
		}
	}
	for _, u := range []string{"http://127.0.0.1:8080/mcp", "http://localhost/mcp", "http://[::1]:9/mcp", "http://app.localhost/mcp", "https://mcp.example.com/mcp"} {
		if _, err := Parse("t.toml", []byte("[servers.x]\nurl = \""+u+"\"\n")); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
	if _, err := Parse("t.toml", []byte("[servers.x]\ncommand = \"x\"\nallow_plaintext = true\n")); err == nil {
		t.Error("allow_plaintext on a command server passed")
	}
}

// TestSandboxSettingsAreChecked: sandbox, network, roots and read take
// what they document, and a command server's only; the mistakes say how
// to write them.
func TestSandboxSettingsAreChecked(t *testing.T) {
	for body, want := range map[string]string{
		"command = \"x\"\nsandbox = \"maybe\"":               "is not on or off",
		"command = \"x\"\nnetwork = \"some\"":                `"none" or a list of "host:port"`,
		"command = \"x\"\nnetwork = [\"example.com\"]":       "is not host:port",
		"command = \"x\"\nnetwork = [\"localhost:0\"]":       "is not host:port",
		"command = \"x\"\nroots = [\"relative/dir\"]":        "is not an absolute path",
		"command = \"x\"\nroots = [\"/\"]":                   "would let the server change every file",
		"url = \"https://a.example/mcp\"\nsandbox = \"off\"": "a url server runs elsewhere",
	} {
		if _, err := Parse("t.toml", []byte("[servers.x]\n"+body+"\n")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	for _, body := range []string{"sandbox = \"off\"", "sandbox = \"on\"", "network = \"none\"", "network = \"any\"",
		"network = [\"api.example.com:443\", \"127.0.0.1:8080\"]", "roots = [\"/srv/data\"]\nread = [\"/opt/models\"]"} {
		c, err := Parse("t.toml", []byte("[servers.x]\ncommand = \"x\"\n"+body+"\n"))
		if err != nil {
			t.Errorf("%s: %v", body, err)
			continue
		}
		if body == "sandbox = \"off\"" && c.Servers["x"].Confined() {
			t.Error("sandbox = off still confined")
		}
		if mode, ports, hosts := c.Servers["x"].Network(); strings.HasPrefix(body, "network = [") && (mode != "ports" || len(ports) != 2 || ports[0] != 443 || hosts[0] != "api.example.com") {
			t.Errorf("%s: %s %v %v", body, mode, ports, hosts)
		}
	}
}
