package sessions

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/bridge"
	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/projections"
)

// recordedHosts serves the session's host answers on real pipe servers:
// each command gets its recorded answers in order, from the host of the
// root that gave them. Answers of no chosen root come from the host at
// PipePath; each root the bridge chose among several gets its own socket
// beside it, returned for the bridge to choose among again.
func recordedHosts(ctx context.Context, s *Session, opts RedriveOptions, em *events.Emitter) ([]host.Entry, func(), error) {
	var mu sync.Mutex
	queues := map[string]map[string][]*pipe.Answer{} // root → command → answers
	var roots []string
	for i := range s.Steps {
		if st := &s.Steps[i]; st.Step == StepHost {
			if queues[st.Root] == nil {
				queues[st.Root] = map[string][]*pipe.Answer{}
				if st.Root != "" {
					roots = append(roots, st.Root)
				}
			}
			queues[st.Root][st.Command] = append(queues[st.Root][st.Command], st.Answer)
		}
	}
	sort.Strings(roots)
	if err := os.MkdirAll(filepath.Dir(opts.PipePath), 0o700); err != nil {
		return nil, nil, err
	}
	var hosts []host.Entry
	var stops []func()
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
	}
	for i, root := range append([]string{""}, roots...) {
		queue := queues[root]
		path := opts.PipePath
		if root != "" {
			path = filepath.Join(filepath.Dir(opts.PipePath), fmt.Sprintf("host-%d.sock", i))
			hosts = append(hosts, host.Entry{Root: root, Socket: path})
		}
		handlers := map[string]pipe.Handler{}
		for cmd := range queue {
			handlers[cmd] = func(context.Context, pipe.Request) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				if len(queue[cmd]) == 0 {
					return nil, &events.Err{Code: events.CodeToolError, Msg: "the recording has no more answers for " + cmd}
				}
				a := queue[cmd][0]
				queue[cmd] = queue[cmd][1:]
				if !a.OK {
					return nil, &events.Err{Code: a.Code, Msg: a.Message}
				}
				return a.Payload, nil
			}
		}
		l, err := pipe.Listen(path)
		if err != nil {
			stopAll()
			return nil, nil, fmt.Errorf("recorded host: %w", err)
		}
		hctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			pipe.NewServer(pipe.ServerOptions{Handlers: handlers, Recorder: em, Logger: opts.Logger}).Serve(hctx, l)
		}()
		stops = append(stops, func() { cancel(); l.Close(); <-done })
	}
	return hosts, stopAll, nil
}

// decide gives a step's recorded operator decisions again: each approval
// prompt the step raises in the re-drive is answered, in order, with the
// decision the operator gave in the recording. It stops when the returned
// func is called.
func decide(ctx context.Context, st *Step, log Log, em *events.Emitter, now func() time.Time) func() {
	if len(st.Decisions) == 0 {
		return func() {}
	}
	dctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		answered := map[string]bool{}
		next := 0
		for next < len(st.Decisions) {
			pending, _ := projections.PendingApprovals(dctx, log, now())
			for _, p := range pending {
				if answered[p.ID] || next >= len(st.Decisions) {
					continue
				}
				d := st.Decisions[next]
				next++
				answered[p.ID] = true
				em.Emit(projections.Decision(p, d.Decision, d.By, d.Reason, time.Time{})) // no wait: the triads carry no operator clock
				em.Flush(dctx, p.RequestID)
			}
			select {
			case <-dctx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return func() { cancel(); <-done }
}

// orNone is s, or "-" when it is empty: how a missing value reads in a
// drift line.
func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// redriveHost is the re-driven bridge's way to the recorded hosts: the one
// at opts.PipePath, or a router choosing among several by the client's
// recorded roots.
func redriveHost(opts RedriveOptions, cfg *config.Config, em *events.Emitter, hosts []host.Entry) bridge.Host {
	copts := pipe.ClientOptions{Path: opts.PipePath, Recorder: em, Timeout: cfg.PipeTimeout(), Logger: opts.Logger}
	if len(hosts) == 0 {
		return pipeHost{pipe.NewClient(copts)}
	}
	return host.NewRouter(host.RouterOptions{Fixed: hosts, Roots: executor.ClientRoots, Client: copts})
}

// pipeHost adapts a pipe.Client (whose Close returns an error) to
// bridge.Host.
type pipeHost struct{ *pipe.Client }

func (c pipeHost) Close() { c.Client.Close() }
