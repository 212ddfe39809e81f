package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/confine"
)

// spawnAttrs are what upstream.started records of a stdio server's start:
// the command as configured (credentials redacted), the executable it
// resolved to and its SHA-256, the names of the environment it got (never
// the values), the user it runs as, its pid, and its confinement.
func (s *Server) spawnAttrs(p *process, exe string, env []string, conf confinement) events.Attrs {
	names := make([]string, 0, len(env))
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && !strings.HasPrefix(k, "TRACEBRIDGE_UPSTREAM") {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	attrs := events.A("command", s.cfg.Describe(), "pid", fmt.Sprint(p.pid()), "uid", fmt.Sprint(os.Getuid()),
		"env", strings.Join(names, ","), "sandbox", conf.word, "executable", exe)
	if conf.spec != nil {
		attrs.Set("sandboxWrite", strings.Join(conf.spec.Write, ","))
		attrs.Set("sandboxNetwork", confine.NetWords(*conf.spec))
		attrs.Set("sandboxRead", fmt.Sprint(len(conf.spec.Read)))
	}
	if sum, err := executableHashes.of(exe); err == nil {
		attrs.Set("executableSha256", sum)
	} else {
		attrs.Set("executableSha256", "unreadable: "+err.Error())
	}
	return attrs
}

// resolveCommand is the absolute path of the executable command names,
// as its start will run it (PATH, then the bridge's folder).
func resolveCommand(command string) (string, error) {
	exe, err := exec.LookPath(command)
	if err != nil {
		return "", err
	}
	return filepath.Abs(exe)
}

// commandHash is the SHA-256 of the executable command resolves to, or
// what says why there is none.
func commandHash(command string) string {
	exe, err := resolveCommand(command)
	if err != nil {
		return "unresolved: " + command
	}
	sum, err := executableHashes.of(exe)
	if err != nil {
		return "unreadable: " + exe
	}
	return sum
}

// hashCache keeps each executable's SHA-256 while its size and
// modification time stay: a server restarted after a crash is not read
// again (node is ~100 MB).
type hashCache struct {
	mu   sync.Mutex
	sums map[string]cachedHash
}

type cachedHash struct {
	size int64
	mod  time.Time
	sum  string
}

var executableHashes = &hashCache{sums: map[string]cachedHash{}}

func (c *hashCache) of(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	h, ok := c.sums[path]
	c.mu.Unlock()
	if ok && h.size == fi.Size() && h.mod.Equal(fi.ModTime()) {
		return h.sum, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	d := sha256.New()
	if _, err := io.Copy(d, f); err != nil {
		return "", err
	}
	sum := hex.EncodeToString(d.Sum(nil))
	c.mu.Lock()
	c.sums[path] = cachedHash{fi.Size(), fi.ModTime(), sum}
	c.mu.Unlock()
	return sum, nil
}
