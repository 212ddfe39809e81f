package config

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// Package is a server's package as a package runner (npx, uvx) names it
// on its command line: Arg is its index in the args.
type Package struct {
	Manager string // "npm" or "pypi"
	Name    string // without the version
	Version string // as written ("" none, or a tag, a range)
	Arg     int
}

// Spec is how the runner is given p at version v.
func (p Package) Spec(v string) string {
	if p.Manager == "pypi" {
		return p.Name + "==" + v
	}
	return p.Name + "@" + v
}

// Pinned reports whether p names one exact version.
func (p Package) Pinned() bool { return exactVersionRE.MatchString(p.Version) }

var exactVersionRE = regexp.MustCompile(`^v?\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$`)

// RunnerPackage is the package a command runs through npx (npx -y PKG,
// npx --yes PKG, npm exec PKG) or uvx (uvx PKG), if it does.
func RunnerPackage(command string, args []string) (Package, bool) {
	base := strings.TrimSuffix(filepath.Base(command), ".cmd")
	var manager string
	rest := args
	switch {
	case base == "npx" || base == "pnpx" || base == "bunx":
		manager = "npm"
	case base == "npm" && len(args) > 0 && args[0] == "exec":
		manager, rest = "npm", args[1:]
	case base == "uvx":
		manager = "pypi"
	default:
		return Package{}, false
	}
	for i, a := range rest {
		if strings.HasPrefix(a, "-") {
			if a == "--package" || a == "-p" || a == "--from" {
				return Package{}, false // a package named apart from the command: left as written
			}
			continue
		}
		idx := i + len(args) - len(rest)
		if manager == "pypi" {
			name, version, _ := strings.Cut(a, "==")
			return Package{Manager: manager, Name: name, Version: version, Arg: idx}, true
		}
		at := strings.LastIndex(a, "@")
		if at <= 0 { // "@scope/name" has its @ first
			return Package{Manager: manager, Name: a, Arg: idx}, true
		}
		return Package{Manager: manager, Name: a[:at], Version: a[at+1:], Arg: idx}, true
	}
	return Package{}, false
}

// WellKnownPackages are the server packages a lookalike imitates: the
// reference servers published under @modelcontextprotocol and the SDKs.
var WellKnownPackages = []string{
	"@modelcontextprotocol/server-everything", "@modelcontextprotocol/server-filesystem", "@modelcontextprotocol/server-memory",
	"@modelcontextprotocol/server-sequential-thinking", "@modelcontextprotocol/server-github", "@modelcontextprotocol/server-gitlab",
	"@modelcontextprotocol/server-google-maps", "@modelcontextprotocol/server-puppeteer", "@modelcontextprotocol/server-slack",
	"@modelcontextprotocol/server-brave-search", "@modelcontextprotocol/server-postgres", "@modelcontextprotocol/server-sqlite",
	"@modelcontextprotocol/server-redis", "@modelcontextprotocol/server-aws-kb-retrieval", "@modelcontextprotocol/server-everart",
	"@modelcontextprotocol/server-gdrive", "@modelcontextprotocol/sdk", "@modelcontextprotocol/inspector",
	"mcp-server-fetch", "mcp-server-git", "mcp-server-time", "mcp-server-sqlite",
}

// Lookalike is the well-known (or already seen) package name is within a
// small edit distance of without being it ("" none): a typo-squat such as
// @moddelcontextprotocol/server-memory. The scope and the name are
// compared apart, so a real package of the official scope is never one.
func Lookalike(name string, known []string) string {
	if slices.Contains(known, name) || slices.Contains(WellKnownPackages, name) {
		return ""
	}
	scope, bare := splitScope(name)
	for _, k := range known {
		ks, kb := splitScope(k)
		switch {
		case scope == ks && bare != kb && distance(bare, kb) <= 2 && len(kb) > 6:
			return k // the official scope, a name one or two edits off
		case scope != ks && ks != "" && distance(scope, ks) <= 2 && (bare == kb || distance(bare, kb) <= 2):
			return k // a scope one or two edits off the official one
		case ks == "" && scope == "" && bare != kb && distance(bare, kb) <= 1 && len(kb) > 6:
			return k
		}
	}
	return ""
}

func splitScope(name string) (scope, bare string) {
	if strings.HasPrefix(name, "@") {
		if s, b, ok := strings.Cut(name, "/"); ok {
			return s, b
		}
	}
	return "", name
}

// distance is the optimal string alignment distance of a and b (edits,
// adjacent swaps counted once).
func distance(a, b string) int {
	if a == b {
		return 0
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// Resolved is a package's exact version now and the registry's integrity
// of it ("" when the registry gives none).
type Resolved struct {
	Version, Integrity string
}

// ResolveFunc finds the exact version of p (its Version a tag or range,
// or none: the newest) in its registry.
type ResolveFunc func(p Package) (Resolved, error)

func (p Package) String() string {
	if p.Version == "" {
		return p.Name
	}
	return fmt.Sprintf("%s (%s)", p.Name, p.Version)
}
