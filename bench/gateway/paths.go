//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// pathKind is one way of reaching the no-op server.
type pathKind struct {
	name, note string
	start      func(context.Context, *setup) (*path, error)
}

var paths = []pathKind{
	{"direct", "go-sdk client → the server (stdio)", startDirect},
	{"tracebridge-stdio", "tracebridge mcp, the server behind its gateway; evidence durable before each answer", startTracebridgeStdio},
	{"tracebridge-http", "tracebridge mcp --http (Streamable HTTP, bearer token; the client on 2026-07-28: each request stateless); evidence durable before each answer", startTracebridgeHTTP},
	{"tracebridge-http-2025", "tracebridge mcp --http, the client on 2025-11-25 (one session: initialize, Mcp-Session-Id)", startTracebridgeHTTP2025},
	{"supergateway", "supergateway 4.0.0 --stdio, SSE", startSupergateway},
	{"mcp-proxy", "mcp-proxy 6.7.19, Streamable HTTP", startMCPProxy},
}

func pathNames() []string {
	var out []string
	for _, p := range paths {
		out = append(out, p.name)
	}
	return out
}

// setup is what every path is started from.
type setup struct {
	self, tracebridge, peers string
}

// path is a started one: a client session, the root of the process tree
// that serves it, and how to end it.
type path struct {
	session *sdk.ClientSession
	pid     int
	tool    string
	stop    func()
	// data is tracebridge's data dir, removed by cleanup once its
	// evidence was read (after stop).
	data    string
	cleanup func()
}

func client() *sdk.Client {
	return sdk.NewClient(&sdk.Implementation{Name: "bench-gateway", Version: "1"}, nil)
}

func startDirect(ctx context.Context, s *setup) (*path, error) {
	cmd := exec.Command(s.self, noopArg)
	sess, err := client().Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, err
	}
	return &path{session: sess, pid: cmd.Process.Pid, tool: "echo", stop: func() { sess.Close() }}, nil
}

// tracebridgeData is a fresh data dir and a config putting the no-op server
// behind the gateway as "noop".
func tracebridgeData(s *setup) (dir string, env []string, err error) {
	dir, err = os.MkdirTemp("", "tb-bench-gateway-")
	if err != nil {
		return "", nil, err
	}
	cfg := filepath.Join(dir, "tracebridge.toml")
	body := fmt.Sprintf("[servers.noop]\ncommand = %q\nargs = [%q]\n", s.self, noopArg)
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return "", nil, err
	}
	return dir, append(os.Environ(), "TRACEBRIDGE_CONFIG="+cfg, "XDG_CONFIG_HOME="+filepath.Join(dir, "cfg")), nil
}

func startTracebridgeStdio(ctx context.Context, s *setup) (*path, error) {
	dir, env, err := tracebridgeData(s)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.tracebridge, "--data", filepath.Join(dir, "data"), "--log-level", "error", "mcp")
	cmd.Env = env
	sess, err := client().Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &path{session: sess, pid: cmd.Process.Pid, tool: "noop__echo", stop: func() { sess.Close() },
		data: filepath.Join(dir, "data"), cleanup: func() { os.RemoveAll(dir) }}, nil
}

func startTracebridgeHTTP(ctx context.Context, s *setup) (*path, error) {
	return tracebridgeHTTP(ctx, s, nil)
}

func startTracebridgeHTTP2025(ctx context.Context, s *setup) (*path, error) {
	return tracebridgeHTTP(ctx, s, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

func tracebridgeHTTP(ctx context.Context, s *setup, opts *sdk.ClientSessionOptions) (*path, error) {
	dir, env, err := tracebridgeData(s)
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	tok, err := exec.Command(s.tracebridge, "--data", data, "token").Output()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("tracebridge token: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.tracebridge, "--data", data, "--log-level", "error", "mcp", "--http", fmt.Sprintf("127.0.0.1:%d", port))
	cmd.Env = env
	hc := &http.Client{Transport: bearer(strings.TrimSpace(string(tok)))}
	p, err := serveWith(ctx, cmd, fmt.Sprintf("127.0.0.1:%d", port), &sdk.StreamableClientTransport{Endpoint: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), HTTPClient: hc}, opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	p.tool = "noop__echo"
	p.data, p.cleanup = data, func() { os.RemoveAll(dir) }
	return p, nil
}

func startSupergateway(ctx context.Context, s *setup) (*path, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	js := filepath.Join(s.peers, "node_modules", "supergateway", "dist", "index.js")
	cmd := exec.Command("node", js, "--stdio", s.self+" "+noopArg, "--port", fmt.Sprint(port), "--logLevel", "none")
	p, err := serve(ctx, cmd, fmt.Sprintf("127.0.0.1:%d", port), &sdk.SSEClientTransport{Endpoint: fmt.Sprintf("http://127.0.0.1:%d/sse", port)})
	if err != nil {
		return nil, err
	}
	p.tool = "echo"
	return p, nil
}

func startMCPProxy(ctx context.Context, s *setup) (*path, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	js := filepath.Join(s.peers, "node_modules", "mcp-proxy", "dist", "bin", "mcp-proxy.mjs")
	cmd := exec.Command("node", js, "--port", fmt.Sprint(port), "--host", "127.0.0.1", "--server", "stream", "--", s.self, noopArg)
	p, err := serve(ctx, cmd, fmt.Sprintf("127.0.0.1:%d", port), &sdk.StreamableClientTransport{Endpoint: fmt.Sprintf("http://127.0.0.1:%d/mcp", port)})
	if err != nil {
		return nil, err
	}
	p.tool = "echo"
	return p, nil
}

// serve starts an HTTP gateway in a process group of its own and connects
// once it listens on addr (at most 30 s).
func serve(ctx context.Context, cmd *exec.Cmd, addr string, t sdk.Transport) (*path, error) {
	return serveWith(ctx, cmd, addr, t, nil)
}

// serveWith is serve, the client connecting with opts.
func serveWith(ctx context.Context, cmd *exec.Cmd, addr string, t sdk.Transport, opts *sdk.ClientSessionOptions) (*path, error) {
	if _, err := os.Stat(cmd.Args[min(1, len(cmd.Args)-1)]); err != nil && cmd.Args[0] == "node" {
		return nil, fmt.Errorf("%w: install the peers first (npm ci --prefix bench/gateway/peers; make bench-gateway does)", err)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	kill := func() { // asked first (a profile, TRACEBRIDGE_CPUPROFILE, is written at exit), then killed
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	// Listening first; then one connect whose context lives as long as the
	// session (an SSE session's stream is that context's request).
	var err error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		var c net.Conn
		if c, err = net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
	}
	if err != nil {
		kill()
		return nil, errors.Join(fmt.Errorf("%s did not listen on %s within 30 s: %w", filepath.Base(cmd.Args[min(1, len(cmd.Args)-1)]), addr, err), errors.New(stderr.String()))
	}
	sess, err := client().Connect(ctx, t, opts)
	if err != nil {
		kill()
		return nil, errors.Join(err, errors.New(stderr.String()))
	}
	return &path{session: sess, pid: cmd.Process.Pid, stop: func() { sess.Close(); kill() }}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// bearer adds tracebridge's token to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
