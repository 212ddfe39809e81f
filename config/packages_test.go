package config

import (
	"errors"
	"strings"
	"testing"
)

func TestRunnerPackage(t *testing.T) {
	for _, c := range []struct {
		command string
		args    []string
		want    Package
		ok      bool
	}{
		{"npx", []string{"-y", "@modelcontextprotocol/server-memory"}, Package{Manager: "npm", Name: "@modelcontextprotocol/server-memory", Arg: 1}, true},
		{"npx", []string{"--yes", "@scope/pkg@1.2.3", "/dir"}, Package{Manager: "npm", Name: "@scope/pkg", Version: "1.2.3", Arg: 1}, true},
		{"/usr/bin/npx", []string{"pkg@latest"}, Package{Manager: "npm", Name: "pkg", Version: "latest"}, true},
		{"npm", []string{"exec", "-y", "pkg"}, Package{Manager: "npm", Name: "pkg", Arg: 2}, true},
		{"uvx", []string{"mcp-server-fetch==0.6.2"}, Package{Manager: "pypi", Name: "mcp-server-fetch", Version: "0.6.2"}, true},
		{"npx", []string{"--package", "a", "b"}, Package{}, false},
		{"node", []string{"server.js"}, Package{}, false},
	} {
		got, ok := RunnerPackage(c.command, c.args)
		if ok != c.ok || got != c.want {
			t.Errorf("%s %v: %+v %v, want %+v %v", c.command, c.args, got, ok, c.want, c.ok)
		}
	}
	if !(Package{Version: "1.2.3"}).Pinned() || (Package{Version: "^1.2.0"}).Pinned() || (Package{Version: "latest"}).Pinned() {
		t.Error("Pinned")
	}
}

// A typo-squat of the official scope or name is flagged; the official
// packages, other servers' own and an unrelated name are not (twins).
func TestLookalike(t *testing.T) {
	for name, want := range map[string]string{
		"@moddelcontextprotocol/server-memory":   "@modelcontextprotocol/server-memory",
		"@modelcontextprotocl/server-filesystem": "@modelcontextprotocol/server-filesystem",
		"@modelcontextprotocol/server-memroy":    "@modelcontextprotocol/server-memory",
		"@modelcontextprotocol/server-githib":    "@modelcontextprotocol/server-github",
		"mcp-server-fecth":                       "mcp-server-fetch",
		// twins
		"@modelcontextprotocol/server-memory":     "",
		"@modelcontextprotocol/server-everything": "",
		"mcp-server-kubernetes":                   "",
		"@upstash/context7-mcp":                   "",
		"@playwright/mcp":                         "",
		"tavily-mcp":                              "",
	} {
		if got := Lookalike(name, WellKnownPackages); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

// Import pins what it can resolve, notes what it cannot, and leaves a
// lookalike out until the operator names it.
func TestImportPinsPackagesAndHoldsLookalikes(t *testing.T) {
	in := map[string]ClientServer{
		"memory": {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"}},
		"squat":  {Command: "npx", Args: []string{"-y", "@moddelcontextprotocol/server-memory"}},
		"fetch":  {Command: "uvx", Args: []string{"mcp-server-fetch"}},
		"exact":  {Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything@2025.1.1"}},
	}
	resolve := func(p Package) (Resolved, error) {
		if p.Manager == "pypi" {
			return Resolved{}, errors.New("offline")
		}
		return Resolved{Version: "9.8.7", Integrity: "sha512-abc"}, nil
	}
	im := Import(in, ImportOptions{Resolve: resolve})
	notes := strings.Join(im.Notes, "\n")
	if !strings.Contains(im.TOML, `"@modelcontextprotocol/server-memory@9.8.7"`) || !strings.Contains(im.TOML, "registry integrity sha512-abc") {
		t.Errorf("memory not pinned:\n%s", im.TOML)
	}
	if strings.Contains(im.TOML, "[servers.squat]") || !strings.Contains(notes, "--accept-lookalike squat") || len(im.Lookalikes) != 1 {
		t.Errorf("the lookalike was imported or not explained:\n%s\n%s", im.TOML, notes)
	}
	if !strings.Contains(im.TOML, `"mcp-server-fetch"`) || !strings.Contains(notes, "mcp-server-fetch could not be pinned (offline)") {
		t.Errorf("the unresolved package is not noted:\n%s", notes)
	}
	if !strings.Contains(im.TOML, `"@modelcontextprotocol/server-everything@2025.1.1"`) {
		t.Errorf("an exact version was changed:\n%s", im.TOML)
	}
	if _, err := Parse("t.toml", []byte(im.TOML)); err != nil {
		t.Fatal(err)
	}
	im = Import(in, ImportOptions{Resolve: resolve, AcceptLookalike: []string{"squat"}})
	if !strings.Contains(im.TOML, "[servers.squat]") {
		t.Errorf("--accept-lookalike squat did not import it:\n%s", im.TOML)
	}
}
