package host

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
)

// RouterOptions say where a Router finds the hosts.
type RouterOptions struct {
	Registry Registry // the running hosts
	Default  string   // the socket when no host runs: the call says what to start
	Env      string   // $TRACEBRIDGE_HOST: every call goes there
	Cwd      string   // chooses among several hosts for a client without roots
	// Fixed are the hosts when they do not come from the registry: a
	// re-drive's recorded hosts.
	Fixed []Entry
	// Roots are the roots the client of ctx declared (file:// URIs).
	Roots func(ctx context.Context) []string
	// Client configures each connection; Path and Root are set per host.
	Client pipe.ClientOptions
}

// Router is the bridge's (and the operator commands') way to the workspace
// hosts: $TRACEBRIDGE_HOST when set; else the only host; else the host
// whose root holds one of the client's roots, or the working directory.
// list_projects asks every host.
type Router struct {
	opts RouterOptions

	mu      sync.Mutex
	clients map[string]*pipe.Client
}

// NewRouter returns a router; Close closes its connections.
func NewRouter(opts RouterOptions) *Router {
	if opts.Roots == nil {
		opts.Roots = func(context.Context) []string { return nil }
	}
	return &Router{opts: opts, clients: map[string]*pipe.Client{}}
}

// client is the connection to the host at path, serving root ("" when
// it was not chosen among several).
func (r *Router) client(path, root string) *pipe.Client {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := path + "\x00" + root
	c := r.clients[key]
	if c == nil {
		o := r.opts.Client
		o.Path, o.Root = path, root
		c = pipe.NewClient(o)
		r.clients[key] = c
	}
	return c
}

// Close closes every connection.
func (r *Router) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.clients {
		c.Close()
	}
}

// Call sends req to the host this call belongs to.
func (r *Router) Call(ctx context.Context, req pipe.Request) (pipe.Response, error) {
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
func (r *Router) Path() (string, error) { return r.choose(context.Background(), r.hosts()) }

func (r *Router) hosts() []Entry {
	switch {
	case r.opts.Env != "":
		return nil
	case r.opts.Fixed != nil:
		return r.opts.Fixed
	}
	return r.opts.Registry.Live()
}

func (r *Router) choose(ctx context.Context, hosts []Entry) (string, error) {
	switch {
	case r.opts.Env != "":
		return r.opts.Env, nil
	case len(hosts) == 0:
		return r.opts.Default, nil // the client says what to start
	case len(hosts) == 1:
		return hosts[0].Socket, nil
	}
	// The client's declared roots choose; the working directory only for
	// a client that declares none. Each root goes to the deepest host
	// holding it; roots held by different hosts are refused, never routed
	// to one of them silently.
	roots := rootPaths(r.opts.Roots(ctx))
	wanted := roots
	if len(wanted) == 0 {
		wanted = []string{r.opts.Cwd}
	}
	var chosen []string
	for _, w := range wanted {
		if best := deepest(hosts, w); best != "" && !slices.Contains(chosen, best) {
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
		len(hosts), strings.Join(names, ", "), r.opts.Cwd)
}

// deepest is the socket of the host with the longest root holding path.
func deepest(hosts []Entry, path string) string {
	best, bestLen := "", -1
	for _, h := range hosts {
		if within(h.Root, path) && len(h.Root) > bestLen {
			best, bestLen = h.Socket, len(h.Root)
		}
	}
	return best
}

// listAll asks every host for its projects and merges them, each marked
// with its root.
func (r *Router) listAll(ctx context.Context, req pipe.Request, hosts []Entry) (pipe.Response, error) {
	var all ProjectList
	for _, h := range hosts {
		resp, err := r.client(h.Socket, h.Root).Call(ctx, req)
		if err != nil {
			return resp, err
		}
		if !resp.OK {
			return resp, nil
		}
		var one ProjectList
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
