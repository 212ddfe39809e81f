package main

import (
	"os"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/pipe"
)

// listenHost listens for the host of root: on the socket $TRACEBRIDGE_HOST
// names (an editor chose it), else as the data dir's registry assigns. The
// returned func removes the registry entry.
func (m *Main) listenHost(dir hub.DataDir, root string) (*pipe.Listener, string, func(), error) {
	if p := m.Getenv("TRACEBRIDGE_HOST"); p != "" {
		l, err := pipe.Listen(p)
		return l, p, func() {}, err
	}
	return host.Registry(dir.Hosts()).Listen(root, hub.RootHash(root), dir.PipePath(), dir.HostSocket(root), m.Now())
}

// hostRouter routes calls among the data dir's hosts (or the recorded
// ones when fixed is set), choosing by the client's roots.
func (m *Main) hostRouter(dir hub.DataDir, opts pipe.ClientOptions, fixed []host.Entry) *host.Router {
	cwd, _ := os.Getwd()
	return host.NewRouter(host.RouterOptions{Registry: host.Registry(dir.Hosts()), Default: dir.PipePath(), Env: m.Getenv("TRACEBRIDGE_HOST"),
		Cwd: cwd, Fixed: fixed, Roots: executor.ClientRoots, Client: opts})
}
