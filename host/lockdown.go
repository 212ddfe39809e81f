package host

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tracebridge/tracebridge/events"
)

// Opening a repository is not consent to run it (DESIGN §12): a language
// server runs only code the operator installed. Three doors a workspace
// could open are shut here, before a server starts:
//   - typescript-language-server prefers the workspace's own
//     node_modules/typescript: it is told the tsserver to run (the one the
//     operator named, else the TypeScript installed beside it), and never
//     fetches typings on its own;
//   - the go command switches to the toolchain a go.mod or go.work names
//     (downloading it, or finding it on PATH), and runs pkg-config and the C
//     compiler for a file's cgo directives: GOTOOLCHAIN=local, CGO_ENABLED=0;
//   - PATH entries that are relative (resolved in the workspace, where the
//     server runs) or inside the workspace are dropped.

// lockdown is how one language's server is started so that it runs nothing
// the workspace supplies.
type lockdown struct {
	Env         []string
	InitOptions map[string]any
}

// lockDown returns how lang's server starts under root, or why it cannot
// start safely (LanguageServerUnavailable, saying what to set).
func lockDown(lang Language, dir string, environ []string) (lockdown, error) {
	root := rootsOf(dir)
	ld := lockdown{Env: serverEnv(environ, root)}
	if len(lang.Command) == 0 || !isTypeScriptServer(lang) {
		return ld, nil
	}
	ts := lang.TSServer
	if ts == "" {
		ts = bundledTSServer(lang.Command, root)
	}
	if ts == "" {
		return ld, &events.Err{Code: events.CodeLanguageServerUnavailable, Msg: "no TypeScript was found beside " + lang.Command[0] +
			" (it would run the workspace's own node_modules/typescript): install typescript next to typescript-language-server (npm i -g typescript), or name a tsserver.js with `tracebridge host --tsserver-path` or [lsp.typescript] tsserver in tracebridge.toml"}
	}
	if abs, err := filepath.Abs(ts); err == nil && root.hold(abs) {
		return ld, &events.Err{Code: events.CodeLanguageServerUnavailable, Msg: "the tsserver named (" + ts + ") is inside the workspace: name one the operator installed"}
	}
	ld.InitOptions = map[string]any{
		"tsserver":                          map[string]any{"path": ts},
		"disableAutomaticTypingAcquisition": true,
	}
	return ld, nil
}

// isTypeScriptServer says whether lang runs typescript-language-server.
func isTypeScriptServer(lang Language) bool {
	if lang.Name == "typescript" {
		return true
	}
	return slices.ContainsFunc(lang.Command, func(a string) bool { return strings.Contains(filepath.Base(a), "typescript-language-server") })
}

// serverEnv is environ with the go command held to the installed toolchain
// and no cgo, and PATH without entries the workspace could supply.
func serverEnv(environ []string, root roots) []string {
	out := make([]string, 0, len(environ)+2)
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "GOTOOLCHAIN", "CGO_ENABLED":
			continue
		case "PATH":
			kv = "PATH=" + safePath(v, root)
		}
		out = append(out, kv)
	}
	return append(out, "GOTOOLCHAIN=local", "CGO_ENABLED=0")
}

// safePath keeps the absolute entries of a PATH value outside root.
func safePath(path string, root roots) string {
	var keep []string
	for _, d := range filepath.SplitList(path) {
		if filepath.IsAbs(d) && !root.hold(filepath.Clean(d)) {
			keep = append(keep, d)
		}
	}
	return strings.Join(keep, string(filepath.ListSeparator))
}

// bundledTSServer finds the tsserver.js of the TypeScript installed beside
// the server's own script (what Node's require would resolve from it),
// never one inside root; "" when there is none.
func bundledTSServer(command []string, root roots) string {
	var starts []string
	if len(command) > 0 {
		if p, err := exec.LookPath(command[0]); err == nil {
			starts = append(starts, p)
		}
	}
	for _, a := range command[1:] {
		if filepath.IsAbs(a) {
			starts = append(starts, a)
		}
	}
	for _, s := range starts {
		real, err := filepath.EvalSymlinks(s)
		if err != nil || root.hold(real) {
			continue
		}
		for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
			if root.hold(dir) {
				break
			}
			cand := filepath.Join(dir, "node_modules", "typescript", "lib", "tsserver.js")
			if filepath.Base(dir) == "node_modules" {
				cand = filepath.Join(dir, "typescript", "lib", "tsserver.js")
			}
			if st, err := os.Stat(cand); err == nil && st.Mode().IsRegular() {
				if r, err := filepath.EvalSymlinks(cand); err == nil && !root.hold(r) {
					return r
				}
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return ""
}

// roots are a workspace's path as given and with its symlinks resolved.
type roots []string

func rootsOf(root string) roots {
	r := roots{root}
	if real, err := filepath.EvalSymlinks(root); err == nil && real != root {
		r = append(r, real)
	}
	return r
}

// hold says whether p is one of the roots or below one.
func (r roots) hold(p string) bool {
	return slices.ContainsFunc(r, func(root string) bool { return within(root, p) })
}
