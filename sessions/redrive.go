package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/bridge"
	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/replay"
)

// Log is the re-drive's own, fresh event log (a hub on a temporary data
// dir).
type Log interface {
	Append(ctx context.Context, evs []events.Event) ([]uint64, error)
	Head(ctx context.Context) (uint64, events.Hash, error)
	Range(ctx context.Context, from uint64, limit int) ([]events.Event, uint64, error)
	ByRequest(ctx context.Context, id events.ID) ([]events.Event, error)
	View(ctx context.Context, q projections.Query) ([]json.RawMessage, error)
	events.PayloadStore // answers and results are kept whole, as in the recording
	events.PayloadReader
}

// RedriveOptions configures a re-drive.
type RedriveOptions struct {
	// Log is a fresh log for the re-drive's evidence; its clock should be
	// Clock(s).
	Log Log
	// PipePath is where the recorded host listens.
	PipePath string
	// Extra tools join the re-driven bridge's catalog as they joined the
	// recorded one's (a test build's misbehaving tools).
	Extra   []*executor.Tool
	Version string // the bridge's, as initialize reports it
	Logger  *slog.Logger
	// StepTimeout bounds the wait for one answer. Zero: 60s.
	StepTimeout time.Duration
}

// Redriven is the outcome of a re-drive.
type Redriven struct {
	Runs  []replay.Run // one per client and operator step, in step order
	Steps []int        // the step index of each run
	Drift []Drift      // empty: the session behaves as recorded

	// scrub puts the recording's pipe path back where an answer names
	// the re-drive's.
	scrub func(string) string
}

// Label names a step for a person: the method and tool, or the command.
func (st *Step) Label() string {
	switch st.Step {
	case StepClient, StepNotify:
		var p struct {
			Name string `json:"name"`
		}
		json.Unmarshal(st.Params, &p)
		if p.Name != "" {
			return st.Method + " " + p.Name
		}
		return st.Method
	}
	return st.Step + " " + st.Command
}

// Redrive runs s against the current build: the client's messages go to a
// real bridge in this process, the recorded answers come from a real pipe
// server, ids and the clock are deterministic, and the evidence is compared
// with the recording.
func Redrive(ctx context.Context, s *Session, opts RedriveOptions) (*Redriven, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.StepTimeout <= 0 {
		opts.StepTimeout = 60 * time.Second
	}
	cfg := config.Default()
	if s.Header.Config != "" {
		var err error
		if cfg, err = config.Parse("session "+s.Header.Name+" config", []byte(s.Header.Config)); err != nil {
			return nil, err
		}
	}
	cfg = cassetteConfig(cfg)
	d := &redrive{s: s, opts: opts, node: opts.Log, now: Clock(s), secrets: &recordedSecrets{}, client: newRecordedClient(s),
		redriven: map[string]string{}, served: make(chan error, 1)}
	seed := sha256.Sum256([]byte("tracebridge session " + s.Header.Name))
	d.em = events.NewEmitter(d.node, events.EmitterOptions{
		Redactor: events.NewRedactor(seed[:]), IDs: events.NewIDSource(d.now, rand.NewChaCha8(seed)), Now: d.now, Logger: opts.Logger, Payloads: d.node})
	defer d.em.Close(context.Background())

	var hosts []host.Entry
	if s.Header.Host {
		var stop func()
		var err error
		if hosts, stop, err = recordedHosts(ctx, s, opts, d.em); err != nil {
			return nil, err
		}
		defer stop()
	}
	upstreams := newRecordedUpstreams(s)
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	closeBridge, err := d.startBridge(bctx, cfg, hosts, upstreams)
	if err != nil {
		return nil, err
	}
	defer closeBridge()
	d.operator = pipe.NewClient(pipe.ClientOptions{Path: opts.PipePath, Recorder: d.em, Logger: opts.Logger, Timeout: opts.StepTimeout})
	defer d.operator.Close()
	for i := range s.Steps {
		if err := d.step(ctx, i); err != nil {
			return nil, err
		}
	}
	if err := d.end(ctx); err != nil {
		return nil, err
	}
	scrub := func(v string) string { return v }
	if s.Header.Pipe != "" {
		scrub = strings.NewReplacer(opts.PipePath, s.Header.Pipe).Replace
	}
	res, err := collect(ctx, s, d.node, d.stepOf, d.operatorReqs, scrub)
	if err != nil {
		return nil, err
	}
	res.Drift = append(res.Drift, upstreams.Drift()...)
	res.scrub = scrub
	return res, nil
}

// redrive is one re-drive in progress: the bridge on its stdio, the
// recording's stand-ins, and which step each re-driven run belongs to.
type redrive struct {
	s       *Session
	opts    RedriveOptions
	node    Log
	em      *events.Emitter
	now     func() time.Time
	secrets *recordedSecrets
	client  *recordedClient

	pipeW    io.Closer
	inW      *lockedWriter // the steps and the answers to the bridge's own requests share it
	answers  *answerBox
	served   chan error // the bridge's end
	operator *pipe.Client

	stepOf       []int
	operatorReqs []events.ID
	redriven     map[string]string // recorded request id → the re-drive's
	nextID       int
}

// startBridge runs the bridge `tracebridge mcp` runs, on the re-drive's
// stdio and evidence, with the recording standing in for the environment
// and the disk: secrets resolve as recorded (never from the environment or
// a file), approval deadlines fire as recorded, upstreams are the recorded
// ones, discovered tools their recorded stand-ins, and the workspace hosts
// the recorded ones.
func (d *redrive) startBridge(ctx context.Context, cfg *config.Config, hosts []host.Entry, upstreams *RecordedUpstreams) (func(), error) {
	b, err := bridge.New(bridge.Parts{Config: cfg, ConfigText: d.s.Header.Config, Emitter: d.em, Log: d.node, Host: redriveHost(d.opts, cfg, d.em, hosts),
		Getenv: d.secrets.Getenv, ReadFile: d.secrets.ReadFile, After: d.secrets.After, Now: d.now, Logger: d.opts.Logger, Version: d.opts.Version,
		Dial: upstreams.Dial, Extra: append(recordedTools(d.s), d.opts.Extra...)})
	if err != nil {
		return nil, err
	}
	inR, pipeW := io.Pipe()
	outR, outW := io.Pipe()
	d.pipeW, d.inW = pipeW, &lockedWriter{w: pipeW}
	if u := d.s.Header.User; u != nil { // the recorded client's user, as the front door named them
		ctx = identity.With(ctx, *u)
	}
	go func() {
		err := b.Server.Serve(ctx, inR, outW)
		if errors.Is(err, io.EOF) {
			err = nil
		}
		d.served <- err
		outW.Close()
	}()
	d.answers = readAnswers(outR, d.inW, d.client)
	return b.Close, nil
}

// step re-drives step i: a client message, a notification or an
// operator's pipe request.
func (d *redrive) step(ctx context.Context, i int) error {
	st := &d.s.Steps[i]
	switch st.Step {
	case StepClient:
		if err := d.clientStep(ctx, i, st); err != nil {
			return err
		}
		d.stepOf = append(d.stepOf, i)
	case StepNotify:
		if err := writeMessage(d.inW, 0, st); err != nil {
			return fmt.Errorf("step %d: the bridge stopped reading: %w", i+1, err)
		}
	case StepOperator:
		req := d.em.NewID()
		d.operator.Call(ctx, pipe.Request{Command: st.Command, RequestID: req.String(), OperationID: d.em.NewID().String(), Payload: st.Payload})
		if err := d.em.Flush(ctx, req); err != nil {
			return err
		}
		d.operatorReqs = append(d.operatorReqs, req)
		d.stepOf = append(d.stepOf, i)
	}
	return nil
}

// clientStep sends a client request and waits for its answer, giving the
// recorded operator decisions meanwhile.
func (d *redrive) clientStep(ctx context.Context, i int, st *Step) error {
	d.secrets.step.Store(st)
	if len(st.Roots) > 0 {
		d.client.roots.Store(&st.Roots)
	}
	d.nextID++
	stopDeciding := decide(ctx, st, d.node, d.em, d.now)
	defer stopDeciding()
	if err := writeMessage(d.inW, d.nextID, withRequestIDs(st, d.redriven)); err != nil {
		return fmt.Errorf("step %d: the bridge stopped reading: %w", i+1, err)
	}
	select {
	case <-d.answers.wait(d.nextID):
		if !st.RequestID.IsZero() {
			d.redriven[st.RequestID.String()] = d.answers.requestID(d.nextID)
		}
		return nil
	case err := <-d.served:
		return fmt.Errorf("step %d (%s): the bridge exited: %v", i+1, st.Label(), err)
	case <-time.After(d.opts.StepTimeout):
		return fmt.Errorf("step %d (%s): no answer within %v", i+1, st.Label(), d.opts.StepTimeout)
	}
}

// end closes the bridge's stdin, waits for its session to end and makes
// the evidence durable.
func (d *redrive) end(ctx context.Context) error {
	d.pipeW.Close()
	select {
	case err := <-d.served:
		if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("the bridge failed: %w", err)
		}
	case <-time.After(d.opts.StepTimeout):
		return errors.New("the bridge did not end its session after stdin closed")
	}
	return d.em.FlushAll(ctx)
}

// Clock is a re-drive's clock: it stands still at the recording's start,
// so times, durations and ids come out the same on every re-drive.
func Clock(s *Session) func() time.Time {
	at := s.Header.Recorded
	if at.IsZero() {
		at = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	return func() time.Time { return at }
}
