package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
)

// minPrefix is the shortest id prefix a command accepts.
const minPrefix = 4

// resolveID reads an id as a person types it: the whole id or a prefix of
// at least minPrefix characters, in either case, that exactly one of the
// ids candidates lists starts with. what names the ids in messages
// ("request", "session", "approval", "proposal").
func resolveID(s, what string, candidates func() ([]string, error)) (string, error) {
	raw := s
	s = strings.ToUpper(strings.TrimSpace(s))
	if id, err := events.ParseID(s); err == nil {
		return id.String(), nil
	}
	bad := len(s) < minPrefix || len(s) > 26
	for _, r := range s {
		if !strings.ContainsRune("0123456789ABCDEFGHJKMNPQRSTVWXYZ", r) {
			bad = true
		}
	}
	if bad {
		return "", fmt.Errorf("%q is not a %s id: ids are 26 characters (0-9, A-Z), or type a unique prefix of at least %d", raw, what, minPrefix)
	}
	all, err := candidates()
	if err != nil {
		return "", err
	}
	var hits []string
	for _, c := range all {
		if strings.HasPrefix(strings.ToUpper(c), s) {
			hits = append(hits, c)
		}
	}
	switch len(hits) {
	case 0:
		return "", fmt.Errorf("no %s id starts with %s", what, s)
	case 1:
		return hits[0], nil
	}
	shown := hits
	if len(shown) > 3 {
		shown = shown[:3]
	}
	return "", fmt.Errorf("%s is ambiguous: %d %s ids start with it (%s…); type more characters", s, len(hits), what, strings.Join(shown, ", "))
}

// viewIDs lists the ids under field of a view's entries (the runs view by
// a prefix of their ids, the sessions view whole).
func viewIDs(ctx context.Context, log interface {
	View(context.Context, projections.Query) ([]json.RawMessage, error)
}, view, field, text string) ([]string, error) {
	rows, err := log.View(ctx, projections.Query{View: view, Text: text, Limit: 1 << 20})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, r := range rows {
		var m map[string]any
		if json.Unmarshal(r, &m) == nil {
			if id, ok := m[field].(string); ok {
				out = append(out, id)
			}
		}
	}
	return out, nil
}

// requestID resolves a request id (or a prefix of one) against the runs.
func (m *Main) requestID(ctx context.Context, s string) (events.ID, error) {
	return m.logID(ctx, s, "request", "runs", "requestId")
}

// sessionID resolves a session id (or a prefix of one) against the sessions.
func (m *Main) sessionID(ctx context.Context, s string) (events.ID, error) {
	return m.logID(ctx, s, "session", "sessions", "sessionId")
}

func (m *Main) logID(ctx context.Context, s, what, view, field string) (events.ID, error) {
	idText, err := resolveID(s, what, func() ([]string, error) {
		node, err := m.openLog(ctx, what)
		if err != nil {
			return nil, err
		}
		defer node.Close()
		return viewIDs(ctx, node, view, field, strings.ToLower(strings.TrimSpace(s)))
	})
	if err != nil {
		return events.ID{}, usageError{err.Error()}
	}
	return events.ParseID(idText)
}
