//lint:file-ignore SA1019 roots are deprecated in 2026-07-28 but in their window: a confined server may change its client's roots (issue 44)
package upstream

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/internal/confine"
)

// Sandbox words, as upstream.started records them.
const (
	sandboxLandlock    = "landlock"
	sandboxOff         = "off"         // sandbox = "off" on the server
	sandboxUnavailable = "unavailable" // no Landlock on this system
)

// confinement is how a command server starts: its sandbox word and, when
// confined, its plan.
type confinement struct {
	word string
	spec *confine.Spec
	tmp  string // its TMPDIR
	err  error
}

// confinement plans l's server's sandbox (see plan), with its client's
// roots. env gains its TMPDIR.
func (s *Server) confinement(ctx context.Context, l *link, exe string, env, own []string) (confinement, []string, error) {
	if !s.cfg.Confined() || confine.ABI() == 0 {
		return plan(s.name, s.cfg, "", "", exe, nil, nil), env, nil
	}
	conf := plan(s.name, s.cfg, s.g.opts.StateDir, s.g.opts.Getenv("HOME"), exe, own, l.spawnRoots(ctx))
	if conf.err != nil {
		return conf, env, conf.err
	}
	return conf, append(env, "TMPDIR="+conf.tmp), nil
}

// plan is a command server's confinement: none when its sandbox is off
// or Landlock is missing (and the word says which); else the system and
// its install to read, its roots (configured, its client's, those its
// args and its own env name) and its own state and tmp folders under
// stateRoot to change, its network as configured.
func plan(name string, cfg config.Server, stateRoot, home, exe string, own, clientRoots []string) confinement {
	if !cfg.Confined() {
		return confinement{word: sandboxOff}
	}
	abi := confine.ABI()
	if abi == 0 {
		return confinement{word: sandboxUnavailable}
	}
	state, tmp, err := dirs(name, stateRoot)
	if err != nil {
		return confinement{err: err}
	}
	mode, ports, _ := cfg.Network()
	spec := confine.Plan(confine.Request{Exec: exe, Args: cfg.Args, Env: own, Cwd: cfg.Cwd, Roots: append(slices.Clone(cfg.Roots), clientRoots...),
		Read: cfg.Read, State: state, Tmp: tmp, Home: home, Net: mode, Ports: ports})
	return confinement{word: fmt.Sprintf("%s v%d", sandboxLandlock, abi), spec: &spec, tmp: tmp}
}

// dirs are a server's own folders under root: state (kept) and tmp (its
// TMPDIR), made when missing, owner-only.
func dirs(name, root string) (state, tmp string, err error) {
	if root == "" {
		root = filepath.Join(os.TempDir(), fmt.Sprintf("tracebridge-servers-%d", os.Getuid()))
	}
	state, tmp = filepath.Join(root, name, "state"), filepath.Join(root, name, "tmp")
	for _, d := range []string{state, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", "", fmt.Errorf("server %s: its own folder: %w", name, err)
		}
	}
	return state, tmp, nil
}

// spawnRoots are the file:// roots l's client declared, as paths, asked
// once: the client the link makes next is given the same.
func (l *link) spawnRoots(ctx context.Context) []string {
	if l.owner == nil {
		return nil
	}
	if caps := l.owner.Capabilities(); caps == nil || caps.RootsV2 == nil {
		return nil
	}
	l.asked = l.ownerRoots(ctx)
	l.rootsAsked = true
	var out []string
	for _, r := range l.asked {
		if u, err := url.Parse(r.URI); err == nil && u.Scheme == "file" && filepath.IsAbs(u.Path) && u.Path != "/" {
			out = append(out, filepath.Clean(u.Path))
		}
	}
	return out
}

// deniedRE finds what a program says when the kernel refused it: the
// errno names and texts of EACCES and EPERM.
var deniedRE = regexp.MustCompile(`(?i)(EACCES|EPERM|permission denied|operation not permitted)`)

// confinedHint says, for a confined server that exited, which access its
// stderr says was refused, and how to grant it; "" when it says none.
func confinedHint(name string, tail string) string {
	for _, line := range strings.Split(tail, " | ") {
		if deniedRE.MatchString(line) {
			return fmt.Sprintf("Confined: the server ran confined and was refused an access (%s): grant it with roots, read or network on [servers.%s], or set sandbox = \"off\" there; `tracebridge servers test %s` lists what it touched",
				oneLine(line, 200), name, name)
		}
	}
	return ""
}
