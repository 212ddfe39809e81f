package host

import (
	"strings"
	"sync"
	"time"
)

// lineCache keeps the lines of the workspace files the language tools
// quote (a find_references answer names dozens), checked on every use
// against the file's size and modification time: one lstat, no read, when
// the file has not changed.
type lineCache struct {
	mu    sync.Mutex
	files map[string]cachedLines // by workspace-relative path
}

type cachedLines struct {
	size  int64
	mod   time.Time
	lines []string
}

// maxCachedFiles bounds the cache; past it, it starts again empty.
const maxCachedFiles = 1024

// get returns the lines of the workspace file rel (nil: not readable).
func (c *lineCache) get(ws *Workspace, rel string) []string {
	fi, err := ws.regular(rel)
	if err != nil || fi == nil {
		return nil
	}
	c.mu.Lock()
	hit, ok := c.files[rel]
	c.mu.Unlock()
	if ok && hit.size == fi.Size() && hit.mod.Equal(fi.ModTime()) {
		return hit.lines
	}
	b, err := ws.ReadFile(rel)
	if err != nil {
		return nil
	}
	lines := strings.Split(string(b), "\n")
	c.mu.Lock()
	if c.files == nil || len(c.files) >= maxCachedFiles {
		c.files = map[string]cachedLines{}
	}
	c.files[rel] = cachedLines{size: fi.Size(), mod: fi.ModTime(), lines: lines}
	c.mu.Unlock()
	return lines
}
