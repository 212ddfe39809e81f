package hub

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
)

// projectEvery is the least time between two catch-ups of the live loop,
// so a busy log costs the projections one transaction per interval, not
// one per commit. Queries catch up themselves first, so nothing reads
// stale state.
const projectEvery = 100 * time.Millisecond

// project keeps the projections caught up with the log while the hub runs.
func (h *Hub) project() {
	defer close(h.projDone)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-h.stop; cancel() }()
	for {
		start := time.Now()
		if n, err := h.proj.CatchUp(ctx, nil); err != nil && ctx.Err() == nil {
			h.log.Warn("projections: catch-up failed; queries will retry", "err", err)
		} else if n > 10000 {
			h.log.Info("projections caught up", "events", n, "took", time.Since(start).Round(time.Millisecond))
		}
		select {
		case <-h.stop:
			return
		case <-time.After(projectEvery):
		}
		select {
		case <-h.stop:
			return
		case <-h.projWake:
		}
	}
}

// wake tells the projection loop that events were committed.
func (h *Hub) wake() {
	select {
	case h.projWake <- struct{}{}:
	default:
	}
}

type rebuildQuery struct {
	Names    []string `json:"names,omitempty"`
	Progress string   `json:"progress,omitempty"` // subject to publish progress on
}

type rebuildReply struct {
	Events uint64 `json:"events"`
}

type progressMsg struct {
	Done  uint64 `json:"done"`
	Total uint64 `json:"total"`
}

func (h *Hub) rebuild(q rebuildQuery) (*nats.Msg, error) {
	var last time.Time
	progress := func(done, total uint64) {
		if q.Progress == "" || (time.Since(last) < 100*time.Millisecond && done < total) {
			return
		}
		last = time.Now()
		b, _ := json.Marshal(progressMsg{done, total})
		h.nc.Publish(q.Progress, b)
	}
	n, err := h.proj.Rebuild(context.Background(), q.Names, progress)
	if err != nil {
		return nil, &events.Err{Code: events.CodeUnknownQuery, Msg: fmt.Sprintf("rebuild: %v", err)}
	}
	return jsonMsg(rebuildReply{Events: n}), nil
}

func (h *Hub) view(q projections.Query) (*nats.Msg, error) {
	rows, err := h.proj.Query(context.Background(), q, true)
	if err != nil {
		return nil, &events.Err{Code: events.CodeUnknownQuery, Msg: err.Error()}
	}
	return jsonMsg(rows), nil
}
