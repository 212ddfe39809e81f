package upstream

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

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
}

// confinement plans l's server's sandbox: the system and its install to
// read, its roots (configured, its client's, those its args and its own
// env name), its own state and tmp folders to change, its network as
// configured. env gains its TMPDIR.
func (s *Server) confinement(ctx context.Context, l *link, exe string, env, own []string) (confinement, []string, error) {
	if !s.cfg.Confined() {
		return confinement{word: sandboxOff}, env, nil
	}
	abi := confine.ABI()
	if abi == 0 {
		return confinement{word: sandboxUnavailable}, env, nil
	}
	state, tmp, err := s.dirs()
	if err != nil {
		return confinement{}, env, err
	}
	mode, ports, _ := s.cfg.Network()
	req := confine.Request{Exec: exe, Args: s.cfg.Args, Env: own, Cwd: s.cfg.Cwd, Roots: append(s.cfg.Roots, l.spawnRoots(ctx)...),
		Read: s.cfg.Read, State: state, Tmp: tmp, Home: s.g.opts.Getenv("HOME"), Net: mode, Ports: ports}
	spec := confine.Plan(req)
	env = append(env, "TMPDIR="+tmp)
	return confinement{word: fmt.Sprintf("%s v%d", sandboxLandlock, abi), spec: &spec}, env, nil
}

// dirs are the server's own folders under the gateway's state folder:
// state (kept) and tmp (its TMPDIR), made when missing, owner-only.
func (s *Server) dirs() (state, tmp string, err error) {
	root := s.g.opts.StateDir
	if root == "" {
		root = filepath.Join(os.TempDir(), fmt.Sprintf("tracebridge-servers-%d", os.Getuid()))
	}
	state, tmp = filepath.Join(root, s.name, "state"), filepath.Join(root, s.name, "tmp")
	for _, d := range []string{state, tmp} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return "", "", fmt.Errorf("server %s: its own folder: %w", s.name, err)
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
