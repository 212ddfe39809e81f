package upstream

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/confine"
	"github.com/tracebridge/tracebridge/internal/lineconn"
)

// Probe is one trial start of a command server (`tracebridge servers test
// NAME`): its confinement, whether it answered the handshake and
// tools/list, what it held open or mapped once it had, and what its
// stderr said was refused.
type Probe struct {
	Sandbox    string
	Spec       *confine.Spec
	Executable string
	Tools      []string
	// Touched are the files the server's processes held open or mapped
	// after tools/list, and their working folders.
	Touched []string
	// Refused are its stderr lines that say an access was refused.
	Refused []string
	Stderr  string
	Err     error
}

// ProbeServer starts cfg's server name once, as the gateway would (its
// environment, secrets expanded, its confinement), lists its tools and
// stops it. Nothing is recorded: it is a trial.
func ProbeServer(ctx context.Context, c *config.Config, name, stateRoot string, getenv func(string) string, secrets map[string]string) Probe {
	cfg := c.Servers[name]
	var p Probe
	exe, err := resolveCommand(cfg.Command)
	if err != nil {
		p.Err = fmt.Errorf("server %s: `%s`: %w", name, cfg.Describe(), err)
		return p
	}
	p.Executable = exe
	env := c.ChildEnv(name, getenv)
	var own []string
	for _, k := range sortedKeys(cfg.Env) {
		own = append(own, k+"="+config.ExpandSecrets(cfg.Env[k], func(n string) string { return secrets[n] }))
	}
	env = append(env, own...)
	conf := plan(name, cfg, stateRoot, getenv("HOME"), exe, own, nil)
	if conf.err != nil {
		p.Err = conf.err
		return p
	}
	p.Sandbox, p.Spec = conf.word, conf.spec
	if conf.tmp != "" {
		env = append(env, "TMPDIR="+conf.tmp)
	}
	key := make([]byte, 32)
	rand.Read(key)
	red := events.NewRedactor(key)
	for _, v := range secrets {
		red.Register(v)
	}
	proc, err := startProcess(cfg, exe, env, conf.spec, slog.New(slog.NewTextHandler(io.Discard, nil)), red)
	if err != nil {
		p.Err = err
		return p
	}
	defer proc.stop()
	cctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout())
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "tracebridge-servers-test", Version: "1"}, nil)
	cs, err := client.Connect(cctx, &lineconn.Transport{Reader: proc.stdout, Writer: proc.stdin, MaxFrame: sdk.DefaultMaxLineLength}, nil)
	if err == nil {
		defer cs.Close()
		for tool, terr := range cs.Tools(cctx, nil) {
			if terr != nil {
				err = terr
				break
			}
			p.Tools = append(p.Tools, tool.Name)
		}
	}
	if err == nil {
		p.Touched = touched(proc.pid(), proc.tag)
	}
	p.Err = err
	if err != nil {
		proc.waitExit(500 * time.Millisecond)
	}
	p.Stderr = proc.tail()
	for _, line := range strings.Split(p.Stderr, " | ") {
		if deniedRE.MatchString(line) {
			p.Refused = append(p.Refused, line)
		}
	}
	return p
}

// touched is what the process pid and the processes carrying its tag hold
// open or mapped, and their working folders: files only (no pipes,
// sockets or anonymous memory), sorted.
func touched(pid int, tag string) []string {
	pids := []int{pid}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		n, err := strconv.Atoi(filepath.Base(d))
		if err != nil || n == pid {
			continue
		}
		if env, err := os.ReadFile(filepath.Join(d, "environ")); err == nil && slices.Contains(strings.Split(string(env), "\x00"), tag) {
			pids = append(pids, n)
		}
	}
	var out []string
	add := func(p string) {
		if strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "/proc/") && !slices.Contains(out, p) {
			out = append(out, strings.TrimSuffix(p, " (deleted)"))
		}
	}
	for _, n := range pids {
		base := filepath.Join("/proc", strconv.Itoa(n))
		if cwd, err := os.Readlink(filepath.Join(base, "cwd")); err == nil {
			add(cwd)
		}
		fds, _ := os.ReadDir(filepath.Join(base, "fd"))
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join(base, "fd", fd.Name())); err == nil {
				add(target)
			}
		}
		if maps, err := os.ReadFile(filepath.Join(base, "maps")); err == nil {
			for _, line := range strings.Split(string(maps), "\n") {
				if f := strings.Fields(line); len(f) >= 6 {
					add(f[5])
				}
			}
		}
	}
	slices.Sort(out)
	return out
}
