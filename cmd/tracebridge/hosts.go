package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/internal/durable"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/bridge/host"
	"github.com/tracebridge/tracebridge/bridge/pipe"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
)

// Several workspace hosts can serve one data dir, one per root: the first
// listens on run/host.sock, the others on run/host-<hash of the root>.sock,
// and each lists itself in run/hosts/<hash>.json while it runs. A bridge
// routes each call to one of them (hostRouter).

// hostEntry is one running host as its registry file tells it.
type hostEntry struct {
	Root    string    `json:"root"`
	Socket  string    `json:"socket"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

func rootHash(root string) string {
	sum := sha256.Sum256([]byte(root))
	return hex.EncodeToString(sum[:6])
}

func hostsDir(dir hub.DataDir) string { return filepath.Join(string(dir), "run", "hosts") }

// liveHosts lists the hosts whose process runs and whose socket exists,
// sorted by root.
func liveHosts(dir hub.DataDir) []hostEntry {
	files, _ := filepath.Glob(filepath.Join(hostsDir(dir), "*.json"))
	var out []hostEntry
	for _, f := range files {
		b, err := os.ReadFile(f)
		var e hostEntry
		if err != nil || json.Unmarshal(b, &e) != nil || !processAlive(e.PID) {
			continue
		}
		if _, err := os.Stat(e.Socket); err != nil {
			continue
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Root < out[j].Root })
	return out
}

// listenHost listens for the host of root: on run/host.sock when no other
// host has it, else on the root's own socket. A second host for the same
// root is refused. The returned func removes the registry entry.
func (m *Main) listenHost(dir hub.DataDir, root string) (*pipe.Listener, string, func(), error) {
	if p := m.Getenv("TRACEBRIDGE_HOST"); p != "" { // the editor chose the socket
		l, err := pipe.Listen(p)
		return l, p, func() {}, err
	}
	for _, e := range liveHosts(dir) {
		if e.Root == root {
			return nil, "", nil, fmt.Errorf("a workspace host for %s runs already (pid %d, %s)", root, e.PID, e.Socket)
		}
	}
	path := defaultPipePath(dir)
	l, err := pipe.Listen(path)
	if err != nil { // another root's host has the default socket
		path = filepath.Join(string(dir), "run", "host-"+rootHash(root)+".sock")
		if l, err = pipe.Listen(path); err != nil {
			return nil, "", nil, err
		}
	}
	entry := filepath.Join(hostsDir(dir), rootHash(root)+".json")
	b, _ := json.Marshal(hostEntry{Root: root, Socket: path, PID: os.Getpid(), Started: m.Now().UTC()})
	if err := durable.MkdirAll(hostsDir(dir), 0o700); err != nil {
		l.Close()
		return nil, "", nil, err
	}
	if err := durable.WriteFileAtomic(entry, b, 0o600); err != nil {
		l.Close()
		return nil, "", nil, err
	}
	return l, path, func() { os.Remove(entry) }, nil
}

// hostRouter is the bridge's (and the operator commands') way to the
// workspace hosts: $TRACEBRIDGE_HOST when set; else the only host; else the
// host whose root holds one of the client's roots, or the working
// directory. list_projects asks every host.
type hostRouter struct {
	dir  hub.DataDir
	env  string // $TRACEBRIDGE_HOST
	cwd  string
	opts pipe.ClientOptions // Path is chosen per call
	// fixed are the hosts when they do not come from the registry: a
	// re-drive's recorded hosts.
	fixed []hostEntry

	mu      sync.Mutex
	clients map[string]*pipe.Client
}

func (m *Main) hostRouter(dir hub.DataDir, opts pipe.ClientOptions) *hostRouter {
	cwd, _ := os.Getwd()
	return &hostRouter{dir: dir, env: m.Getenv("TRACEBRIDGE_HOST"), cwd: cwd, opts: opts, clients: map[string]*pipe.Client{}}
}

// client is the connection to the host at path, serving root ("" when
// it was not chosen among several).
func (r *hostRouter) client(path, root string) *pipe.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := path + "\x00" + root
	c := r.clients[key]
	if c == nil {
		o := r.opts
		o.Path, o.Root = path, root
		c = pipe.NewClient(o)
		r.clients[key] = c
	}
	return c
}

// Close closes every client.
func (r *hostRouter) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.clients {
		c.Close()
	}
}

// Call sends req to the host this call belongs to.
func (r *hostRouter) Call(ctx context.Context, req pipe.Request) (pipe.Response, error) {
	hosts := r.hosts()
	if req.Command == pipe.CmdListProjects && len(hosts) > 1 {
		return r.listAll(ctx, req, hosts)
	}
	path, err := r.choose(ctx, hosts)
	if err != nil {
		return pipe.Response{}, err
	}
	root := ""
	for _, h := range hosts {
		if h.Socket == path && len(hosts) > 1 {
			root = h.Root
		}
	}
	return r.client(path, root).Call(ctx, req)
}

// Path is the socket a call without client roots goes to (the UI, the
// operator commands), or the reason there is none.
func (r *hostRouter) Path() (string, error) { return r.choose(context.Background(), r.hosts()) }

func (r *hostRouter) hosts() []hostEntry {
	switch {
	case r.env != "":
		return nil
	case r.fixed != nil:
		return r.fixed
	}
	return liveHosts(r.dir)
}

func (r *hostRouter) choose(ctx context.Context, hosts []hostEntry) (string, error) {
	switch {
	case r.env != "":
		return r.env, nil
	case len(hosts) == 0:
		return defaultPipePath(r.dir), nil // the client says what to start
	case len(hosts) == 1:
		return hosts[0].Socket, nil
	}
	// The client's declared roots choose; the working directory only for
	// a client that declares none. Each root goes to the deepest host
	// holding it; roots held by different hosts are refused, never routed
	// to one of them silently.
	roots := rootPaths(executor.ClientRoots(ctx))
	wanted := roots
	if len(wanted) == 0 {
		wanted = []string{r.cwd}
	}
	var chosen []string
	for _, w := range wanted {
		best, bestLen := "", -1
		for _, h := range hosts {
			if within(h.Root, w) && len(h.Root) > bestLen {
				best, bestLen = h.Socket, len(h.Root)
			}
		}
		if best != "" && !slices.Contains(chosen, best) {
			chosen = append(chosen, best)
		}
	}
	switch {
	case len(chosen) == 1:
		return chosen[0], nil
	case len(chosen) > 1:
		return "", events.Errorf(events.CodeAmbiguous, "the client's roots (%s) are held by %d workspace hosts: declare the roots of one workspace, or set TRACEBRIDGE_HOST to the socket of the one to use",
			strings.Join(roots, ", "), len(chosen))
	case len(roots) > 0:
		var names []string
		for _, h := range hosts {
			names = append(names, h.Root)
		}
		return "", events.Errorf(events.CodePipeUnavailable, "no workspace host holds the client's roots (%s); hosts run for %s: start `tracebridge host --root DIR` for one of the roots, or set TRACEBRIDGE_HOST",
			strings.Join(roots, ", "), strings.Join(names, ", "))
	}
	var names []string
	for _, h := range hosts {
		names = append(names, h.Root+" ("+h.Socket+")")
	}
	return "", events.Errorf(events.CodePipeUnavailable, "%d workspace hosts run (%s) and none holds the client's roots or the working directory %s: set TRACEBRIDGE_HOST to the socket of the one to use",
		len(hosts), strings.Join(names, ", "), r.cwd)
}

// listAll asks every host for its projects and merges them, each marked
// with its root.
func (r *hostRouter) listAll(ctx context.Context, req pipe.Request, hosts []hostEntry) (pipe.Response, error) {
	var all host.ProjectList
	for _, h := range hosts {
		resp, err := r.client(h.Socket, h.Root).Call(ctx, req)
		if err != nil {
			return resp, err
		}
		if !resp.OK {
			return resp, nil
		}
		var one host.ProjectList
		if err := json.Unmarshal(resp.Payload, &one); err != nil {
			return pipe.Response{}, events.Errorf(events.CodeMalformedEnvelope, "host %s answered list_projects with %v", h.Root, err)
		}
		for _, p := range one.Projects {
			p.Root = h.Root
			all.Projects = append(all.Projects, p)
		}
		all.Limited = all.Limited || one.Limited
	}
	b, _ := json.Marshal(all)
	return pipe.Response{V: pipe.Version, RequestID: req.RequestID, OperationID: req.OperationID, OK: true, Payload: b}, nil
}

// rootPaths turns the client's file:// root URIs into paths.
func rootPaths(uris []string) []string {
	var out []string
	for _, u := range uris {
		if p, err := url.Parse(u); err == nil && p.Scheme == "file" {
			out = append(out, filepath.Clean(p.Path))
		}
	}
	return out
}

// within reports whether path is root or below it.
func within(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
