package mcp

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// await registers a call in flight: resp gets its answer, prog what
// belongs to it before (its progress, and with stream everything sent for
// it); done forgets them. Keyed by the id as the SDK echoes it (-0 comes
// back 0, "\u0041" comes back "A"), and never kept past this POST; false
// when a call with this id is in flight.
func (h *httpSession) await(id, token json.RawMessage, stream bool) (resp, prog chan []byte, done func(), ok bool) {
	resp = make(chan []byte, 1)
	prog = make(chan []byte, 64)
	key := canonicalID(id)
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, dup := h.waiters[key]; dup {
		return nil, nil, nil, false
	}
	h.waiters[key] = resp
	if len(token) > 0 {
		h.progress[string(token)] = prog
	}
	if stream {
		h.streams[key] = prog
		h.order = append(h.order, key)
	}
	return resp, prog, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(token) > 0 {
			delete(h.progress, string(token))
		}
		if h.streams[key] == prog {
			delete(h.streams, key)
			h.order = slices.DeleteFunc(h.order, func(k string) bool { return k == key })
		}
		if h.waiters[key] == resp {
			delete(h.waiters, key)
		}
	}, true
}

// canonicalID is a JSON-RPC id as the SDK echoes it: an integer in its
// shortest decimal form, a string re-encoded by encoding/json.
func canonicalID(id json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(id))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return string(id)
	}
	switch v := v.(type) {
	case json.Number:
		if n, err := strconv.ParseInt(v.String(), 10, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	case string:
		b, _ := json.Marshal(v)
		return string(b)
	}
	return string(id)
}
