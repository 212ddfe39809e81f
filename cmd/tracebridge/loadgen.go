package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracebridge/tracebridge/projections"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
)

func runLoadgen(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("loadgen")
	var cfg loadConfig
	fs.IntVar(&cfg.Requests, "requests", 1000, "requests to send in all (0: until interrupted)")
	fs.IntVar(&cfg.Events, "events", 12, "events per request")
	fs.IntVar(&cfg.Concurrency, "concurrency", 8, "requests in flight at once")
	fs.IntVar(&cfg.AttrBytes, "attr-bytes", 64, "payload bytes per event")
	fs.IntVar(&cfg.AnswerBytes, "answer-bytes", 0, "the bytes of each request's pipe answer (over 4 KiB: a payload of its own, kept in the payload store)")
	acks := fs.Bool("acks", false, "print each event id once it is durable, one per line, on stdout")
	yes := fs.Bool("yes", false, "append to a data dir that already holds MCP sessions (a user's evidence)")
	if err := m.parse(fs, "loadgen [--requests N] [--events N] [--concurrency N] [--attr-bytes N] [--answer-bytes N] [--acks] [--yes]\n\nAppends synthetic requests (each a chain of boundary events followed by a\nflush) through the same path a bridge uses, and reports durable events/s and\nflush latency on stderr. Becomes the hub when none runs.", args); err != nil {
		return err
	}
	if cfg.Events <= 0 || cfg.Concurrency <= 0 || cfg.Requests < 0 || cfg.AttrBytes < 0 || cfg.AnswerBytes < 0 {
		return usageError{"--events and --concurrency must be positive, --requests, --attr-bytes and --answer-bytes not negative"}
	}
	node, err := m.open(ctx, hub.Elect, "loadgen")
	if err != nil {
		return err
	}
	defer node.Close()
	// Synthetic load among a user's real evidence drowns it: refuse a data
	// dir with MCP sessions unless asked.
	if !*yes {
		rows, _ := node.View(ctx, projections.Query{View: projections.ViewSessions, Limit: 1 << 20})
		for _, r := range rows {
			var s projections.Session
			if json.Unmarshal(r, &s) == nil && s.Client != "" {
				return usageError{"this data dir holds MCP sessions (a user's evidence): run loadgen on a scratch --data DIR, or pass --yes to add synthetic runs here"}
			}
		}
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	em, err := m.emitter(dir, node, m.logger())
	if err != nil {
		return err
	}
	if *acks {
		out := &lockedWriter{w: bufio.NewWriter(m.Stdout)}
		cfg.Acked = out.ack
	}
	res, err := loadgen(ctx, em, cfg)
	closeCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if cerr := em.Close(closeCtx); err == nil && cerr != nil && res.Requests > 0 {
		err = cerr
	}
	role := "attached to the hub"
	if node.IsHub() {
		role = "as the hub"
	}
	fmt.Fprintf(m.Stderr, "loadgen (%s): %s\n", role, res)
	return err
}

// loadConfig shapes a synthetic load.
type loadConfig struct {
	Requests, Events, Concurrency, AttrBytes, AnswerBytes int
	// Acked, when set, is called with a request's id and event ids after
	// its Flush returned nil.
	Acked func(req events.ID, ids []events.ID)
}

type loadResult struct {
	Requests, Events int
	Elapsed          time.Duration
	Flush            []time.Duration // per request, sorted
}

func (r loadResult) String() string {
	if r.Requests == 0 {
		return "no request completed"
	}
	return fmt.Sprintf("%d requests, %d events durable in %v: %.0f events/s; flush p50 %v p99 %v",
		r.Requests, r.Events, r.Elapsed.Round(time.Millisecond), float64(r.Events)/r.Elapsed.Seconds(),
		percentile(r.Flush, 0.50), percentile(r.Flush, 0.99))
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))].Round(time.Microsecond)
}

// requestChain is the shape of one synthetic request: the crossings a
// workspace tool call makes.
var requestChain = []string{
	events.KindMCPRequestReceived, events.KindExecutorStarted, events.KindExecutorCatalog,
	events.KindPolicyDecided, events.KindToolStarted, events.KindPipeAttempt, events.KindPipeConnected,
	events.KindPipeRequestSent, events.KindPipeResponseReceived,
	events.KindToolCompleted, events.KindExecutorAudit, events.KindMCPResponseSent,
}

// loadgen emits cfg.Requests requests from cfg.Concurrency goroutines, each
// flushed before the next, until done or ctx ends.
func loadgen(ctx context.Context, em *events.Emitter, cfg loadConfig) (loadResult, error) {
	pad := strings.Repeat("x", cfg.AttrBytes)
	var next atomic.Int64
	var mu sync.Mutex
	var res loadResult
	var firstErr error
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < cfg.Concurrency; w++ {
		wg.Go(func() {
			ids := make([]events.ID, cfg.Events)
			for ctx.Err() == nil {
				n := next.Add(1)
				if cfg.Requests > 0 && n > int64(cfg.Requests) {
					return
				}
				req, sess := em.NewID(), em.NewID()
				for i := range ids {
					kind := requestChain[i%len(requestChain)]
					a := map[string]string{"tool": "loadgen", "step": fmt.Sprint(i), "pad": pad}
					if kind == events.KindPipeResponseReceived && cfg.AnswerBytes > 0 {
						a["answer"] = answerOf(req, cfg.AnswerBytes) // distinct per request: a new payload each time
					}
					ids[i] = em.Emit(events.Event{Kind: kind, RequestID: req, SessionID: sess, Outcome: events.OK, Attrs: events.AttrsOf(a)})
				}
				t0 := time.Now()
				if err := em.Flush(ctx, req); err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						if firstErr == nil {
							firstErr = err
						}
						mu.Unlock()
					}
					return
				}
				d := time.Since(t0)
				if cfg.Acked != nil {
					cfg.Acked(req, ids)
				}
				mu.Lock()
				res.Requests++
				res.Events += len(ids)
				res.Flush = append(res.Flush, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	slices.Sort(res.Flush)
	return res, firstErr
}

// lockedWriter prints acked ids from many goroutines, a request at a time,
// flushed so a reader (the crash test) sees each line as soon as it is true.
type lockedWriter struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (l *lockedWriter) ack(_ events.ID, ids []events.ID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, id := range ids {
		io.WriteString(l.w, id.String()+"\n")
	}
	l.w.Flush()
}

// answerOf is a synthetic answer of n bytes that starts with req.
func answerOf(req events.ID, n int) string {
	s := req.String() + " "
	return s + strings.Repeat("a", max(0, n-len(s)))
}
