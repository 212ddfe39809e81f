// Package clustertest runs a real NATS JetStream cluster for tests: N
// nats-server processes (built from the nats-server module tracebridge
// already depends on) on 127.0.0.1, clustered, JetStream with
// sync_interval: always.
package clustertest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// Binary builds the nats-server command once per test process.
func Binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tb-nats-server-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "nats-server")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/nats-io/nats-server/v2").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build nats-server: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// Node is one nats-server process.
type Node struct {
	Name       string
	ClientPort int
	routePort  int
	conf       string
	store      string
	log        string

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Cluster is the running servers.
type Cluster struct {
	t     testing.TB
	bin   string
	Nodes []*Node
	// Config is inserted into every server's config verbatim.
	Config string
}

// Options shapes Start.
type Options struct {
	Nodes int
	// Config is inserted verbatim into every server's config: an
	// accounts { } block for per-user permissions, a tls { } block.
	Config string
}

// Start runs o.Nodes servers in one cluster and waits until each takes
// clients. They are killed when the test ends.
func Start(t testing.TB, o Options) *Cluster {
	t.Helper()
	c := &Cluster{t: t, bin: Binary(t), Config: o.Config}
	dir := t.TempDir()
	ports := freePorts(t, 2*o.Nodes)
	var routes []string
	for i := range o.Nodes {
		routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", ports[2*i+1]))
	}
	for i := range o.Nodes {
		n := &Node{Name: fmt.Sprintf("n%d", i+1), ClientPort: ports[2*i], routePort: ports[2*i+1]}
		n.conf = filepath.Join(dir, n.Name+".conf")
		n.store = filepath.Join(dir, n.Name+"-js")
		n.log = filepath.Join(dir, n.Name+".log")
		cluster := ""
		if o.Nodes > 1 {
			cluster = fmt.Sprintf("cluster {\n  name: tb\n  listen: 127.0.0.1:%d\n  routes: [%s]\n}\n", n.routePort, strings.Join(routes, ", "))
		}
		conf := fmt.Sprintf(`server_name: %s
listen: 127.0.0.1:%d
jetstream {
  store_dir: %q
  sync_interval: always
}
%s
%s
`, n.Name, n.ClientPort, n.store, cluster, o.Config)
		if err := os.WriteFile(n.conf, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		c.Nodes = append(c.Nodes, n)
	}
	for _, n := range c.Nodes {
		c.StartNode(n)
	}
	t.Cleanup(func() {
		for _, n := range c.Nodes {
			n.kill()
		}
	})
	return c
}

// URL lists every server, for clients.
func (c *Cluster) URL() string {
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, n.URL())
	}
	return strings.Join(urls, ",")
}

// URL is the node's client URL.
func (n *Node) URL() string { return fmt.Sprintf("nats://127.0.0.1:%d", n.ClientPort) }

// StartNode (re)starts n and waits until it takes clients.
func (c *Cluster) StartNode(n *Node) {
	c.t.Helper()
	logf, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		c.t.Fatal(err)
	}
	defer logf.Close()
	cmd := exec.Command(c.bin, "-c", n.conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	n.mu.Lock()
	n.cmd, n.exited = cmd, exited
	n.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", n.ClientPort), 200*time.Millisecond)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("nats-server %s did not listen within 20s:\n%s", n.Name, c.Log(n))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Kill stops n with SIGKILL.
func (c *Cluster) Kill(n *Node) { n.kill() }

func (n *Node) kill() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && n.cmd.Process != nil {
		n.cmd.Process.Signal(syscall.SIGKILL)
		select {
		case <-n.exited:
		case <-time.After(10 * time.Second):
		}
		n.cmd = nil
	}
}

// Log returns the tail of a node's log, for failure messages.
func (c *Cluster) Log(n *Node) string {
	b, _ := os.ReadFile(n.log)
	if i := len(b) - 4000; i > 0 {
		b = b[i:]
	}
	return string(bytes.TrimSpace(b))
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	for _, l := range ls {
		l.Close()
	}
	return ports
}
