package host

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/tracebridge/tracebridge/internal/durable"
	"github.com/tracebridge/tracebridge/internal/proc"
	"github.com/tracebridge/tracebridge/pipe"
)

// Several workspace hosts can serve one data dir, one per root: the first
// listens on the data dir's default socket, the others on sockets of their
// own, and each lists itself in the registry while it runs. A bridge
// routes each call to one of them (Router).

// Entry is one running host as its registry file tells it.
type Entry struct {
	Root    string    `json:"root"`
	Socket  string    `json:"socket"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// Registry is the folder where each running host lists itself, one file
// named by its root's hash (hub.DataDir.Hosts).
type Registry string

// Live lists the hosts whose process runs and whose socket exists, sorted
// by root.
func (r Registry) Live() []Entry {
	files, _ := filepath.Glob(filepath.Join(string(r), "*.json"))
	var out []Entry
	for _, f := range files {
		b, err := os.ReadFile(f)
		var e Entry
		if err != nil || json.Unmarshal(b, &e) != nil || !proc.Alive(e.PID) {
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

// Listen listens for the host of root, named rootHash in file names: on
// first when no other host has it, else on own. A second host for the same
// root is refused. It lists the host in the registry; the returned func
// removes the entry.
func (r Registry) Listen(root, rootHash, first, own string, now time.Time) (*pipe.Listener, string, func(), error) {
	for _, e := range r.Live() {
		if e.Root == root {
			return nil, "", nil, fmt.Errorf("a workspace host for %s runs already (pid %d, %s)", root, e.PID, e.Socket)
		}
	}
	path := first
	l, err := pipe.Listen(path)
	if err != nil { // another root's host has the first socket
		path = own
		if l, err = pipe.Listen(path); err != nil {
			return nil, "", nil, err
		}
	}
	entry := filepath.Join(string(r), rootHash+".json")
	b, _ := json.Marshal(Entry{Root: root, Socket: path, PID: os.Getpid(), Started: now.UTC()})
	if err := durable.MkdirAll(string(r), 0o700); err != nil {
		l.Close()
		return nil, "", nil, err
	}
	if err := durable.WriteFileAtomic(entry, b, 0o600); err != nil {
		l.Close()
		return nil, "", nil, err
	}
	return l, path, func() { os.Remove(entry) }, nil
}
