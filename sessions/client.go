package sessions

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"sync/atomic"
)

// recordedClient answers what the bridge asks the client as the client
// answered in the recording: its roots as it gave them in the step being
// re-driven (none before any), and the upstreams' sampling and
// elicitation requests the bridge relays, each method's answers in order.
type recordedClient struct {
	roots   atomic.Pointer[json.RawMessage]
	mu      sync.Mutex
	relayed map[string][]json.RawMessage
}

func newRecordedClient(s *Session) *recordedClient {
	c := &recordedClient{relayed: map[string][]json.RawMessage{}}
	for _, st := range s.Steps {
		for _, a := range st.Asks {
			if !a.Bridge {
				c.relayed[a.Method] = append(c.relayed[a.Method], a.Answer)
			}
		}
	}
	return c
}

// next is the client's next recorded answer to a relayed method, whole
// ({"result": …} or {"error": …}); nil: none left.
func (c *recordedClient) next(method string) json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	q := c.relayed[method]
	if len(q) == 0 {
		return nil
	}
	c.relayed[method] = q[1:]
	return q[0]
}

// writeMessage sends one JSON-RPC line: a request when id > 0, else a
// notification.
func writeMessage(w io.Writer, id int, st *Step) error {
	msg := map[string]any{"jsonrpc": "2.0", "method": st.Method}
	if id > 0 {
		msg["id"] = id
	}
	if len(st.Params) > 0 {
		msg["params"] = st.Params
	}
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// answerBox hands the bridge's responses to the steps waiting for them.
type answerBox struct {
	mu      sync.Mutex
	waiting map[int]chan struct{}
	reqs    map[int]string // JSON-RPC id → the result's _meta request id
}

// requestID is the request id the answer to JSON-RPC id id named.
func (a *answerBox) requestID(id int) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reqs[id]
}

func (a *answerBox) wait(id int) <-chan struct{} { return a.box(id) }

func (a *answerBox) box(id int) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch, ok := a.waiting[id]
	if !ok {
		ch = make(chan struct{})
		a.waiting[id] = ch
	}
	return ch
}

func readAnswers(r io.Reader, w io.Writer, client *recordedClient) *answerBox {
	a := &answerBox{waiting: map[int]chan struct{}{}, reqs: map[int]string{}}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), MaxSessionLine)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
				Result struct {
					Meta map[string]any `json:"_meta"`
				} `json:"result"`
			}
			if json.Unmarshal(sc.Bytes(), &m) != nil || len(m.ID) == 0 {
				continue // a notification
			}
			if m.Method != "" { // the bridge asks the client (its ids are the bridge's own)
				answerBridge(w, m.ID, m.Method, client)
				continue
			}
			var id int
			if json.Unmarshal(m.ID, &id) != nil {
				continue
			}
			ch := a.box(id)
			a.mu.Lock()
			if req, ok := m.Result.Meta["tracebridge/requestId"].(string); ok {
				a.reqs[id] = req
			}
			select {
			case <-ch:
			default:
				close(ch)
			}
			a.mu.Unlock()
		}
		io.Copy(io.Discard, r)
	}()
	return a
}

// answerBridge answers a request the bridge sends the client at once, as
// the client answered in the recording: roots/list with the step's roots
// (none when it was not asked), a relayed request with the next recorded
// answer to its method, anything else with an error. Unanswered, each
// upstream link waited a second for the client's roots.
func answerBridge(w io.Writer, id json.RawMessage, method string, client *recordedClient) {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	switch a := client.roots.Load(); {
	case method == "roots/list" && a != nil && json.Valid(*a) && (*a)[0] == '"':
		var failed string
		json.Unmarshal(*a, &failed)
		msg["error"] = map[string]any{"code": -32603, "message": failed}
	case method == "roots/list":
		list := []any{}
		var uris []string
		if a != nil {
			json.Unmarshal(*a, &uris)
		}
		for _, u := range uris {
			list = append(list, map[string]string{"uri": u})
		}
		msg["result"] = map[string]any{"roots": list}
	default:
		var ans map[string]json.RawMessage
		if json.Unmarshal(client.next(method), &ans) != nil || (ans["result"] == nil && ans["error"] == nil) {
			ans = map[string]json.RawMessage{"error": json.RawMessage(`{"code":-32601,"message":"the recording holds no more answers of the client to ` + method + `"}`)}
		}
		for k, v := range ans {
			msg[k] = v
		}
	}
	b, _ := json.Marshal(msg)
	w.Write(append(b, '\n'))
}

// lockedWriter serialises whole lines from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// withRequestIDs is st with every recorded request id its params name
// replaced by the re-drive's id of the same step (trace_replay of an
// earlier call names that call's id).
func withRequestIDs(st *Step, redriven map[string]string) *Step {
	if len(redriven) == 0 || len(st.Params) == 0 {
		return st
	}
	params := string(st.Params)
	for rec, now := range redriven {
		if now != "" {
			params = strings.ReplaceAll(params, rec, now)
		}
	}
	out := *st
	out.Params = json.RawMessage(params)
	return &out
}
