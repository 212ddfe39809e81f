package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func jsonResponse(status int, body string) *http.Response {
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body))}
}

func newProtocolCall(method string) *http.Request {
	r, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
	r.Header.Set("Mcp-Method", method)
	r.Header.Set("Mcp-Protocol-Version", newProtocol)
	return r
}

// sseData is each event's data of an SSE body.
func sseData(t *testing.T, body io.Reader) []string {
	t.Helper()
	b, err := io.ReadAll(body)
	var out []string
	for line := range strings.Lines(string(b)) {
		if d, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			out = append(out, d)
		}
	}
	if err != nil {
		out = append(out, "ERROR "+err.Error())
	}
	return out
}

// A tools/call answer streamed as JSON lines (a notification, then the
// response) reaches the SDK as two events, in order; a pretty-printed
// single answer as one; an answer on the old protocol, or to a method
// whose answer is not streamed, is left as it came.
func TestJSONLinesBecomeEvents(t *testing.T) {
	resp := jsonResponse(200, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`+"\n"+
		`{"jsonrpc":"2.0","id":3,"result":{"content":[]}}`)
	asEventStream(newProtocolCall("tools/call"), resp, 1<<20)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	got := sseData(t, resp.Body)
	if len(got) != 2 || !strings.Contains(got[0], "notifications/progress") || !strings.Contains(got[1], `"id":3`) {
		t.Fatalf("events %q", got)
	}
	pretty := jsonResponse(200, "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 4,\n  \"result\": {}\n}\n")
	asEventStream(newProtocolCall("prompts/get"), pretty, 1<<20)
	if got := sseData(t, pretty.Body); len(got) != 1 || got[0] != `{"jsonrpc":"2.0","id":4,"result":{}}` {
		t.Fatalf("a pretty-printed answer: %q", got)
	}
	for _, r := range []*http.Request{newProtocolCall("subscriptions/listen"), func() *http.Request {
		r := newProtocolCall("tools/call")
		r.Header.Set("Mcp-Protocol-Version", sharedProtocol)
		return r
	}()} {
		resp := jsonResponse(200, `{"a":1}`+"\n"+`{"b":2}`)
		asEventStream(r, resp, 1<<20)
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s on %s was rewritten (%s)", r.Header.Get("Mcp-Method"), r.Header.Get("Mcp-Protocol-Version"), ct)
		}
	}
}

// A server streaming one value past the frame cap is cut off with an
// error, not read whole into memory.
func TestJSONLinesCapEachMessage(t *testing.T) {
	huge := `{"jsonrpc":"2.0","id":1,"result":{"text":"` + strings.Repeat("x", 1<<20) + `"}}`
	resp := jsonResponse(200, huge)
	asEventStream(newProtocolCall("tools/call"), resp, 4096)
	got := sseData(t, resp.Body)
	if len(got) == 0 || !strings.HasPrefix(got[len(got)-1], "ERROR") {
		t.Fatalf("an oversized message passed: %d events", len(got))
	}
	ok := jsonResponse(200, strings.Repeat(`{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"`+strings.Repeat("y", 3000)+`"}}`+"\n", 20)+
		`{"jsonrpc":"2.0","id":1,"result":{}}`)
	asEventStream(newProtocolCall("tools/call"), ok, 4096)
	if got := sseData(t, ok.Body); len(got) != 21 || strings.HasPrefix(got[20], "ERROR") {
		t.Fatalf("many messages each under the cap: %d events, last %.80q", len(got), got[len(got)-1])
	}
}

// A 400 carrying the request's JSON-RPC error is that answer (status 200,
// body unchanged); a 400 that is not one stays a 400.
func TestErrorAnswerKeepsTheServersCode(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":8,"error":{"code":-32021,"message":"MissingRequiredClientCapabilityError"}}`
	resp := jsonResponse(400, body)
	errorAsAnswer(newProtocolCall("tools/call"), resp)
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != body {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	for _, body := range []string{`not json`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`} {
		resp := jsonResponse(400, body)
		errorAsAnswer(newProtocolCall("tools/call"), resp)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 400 || string(b) != body {
			t.Fatalf("%q became %d %s", body, resp.StatusCode, b)
		}
	}
}

// Whatever a server streams, what reaches the SDK is SSE events whose
// data are single JSON values, or an error.
func FuzzJSONAsSSE(f *testing.F) {
	f.Add([]byte(`{"a":1}` + "\n" + `{"b":[1,2]}`))
	f.Add([]byte("{\n \"x\": \"\\n{\"\n}"))
	f.Add([]byte(`{"a":`))
	f.Add([]byte(`[1,2] 3 "s" null`))
	f.Fuzz(func(t *testing.T, body []byte) {
		resp := jsonResponse(200, string(body))
		asEventStream(newProtocolCall("tools/call"), resp, 1<<16)
		out, _ := io.ReadAll(resp.Body)
		for ev := range bytes.SplitSeq(out, []byte("\n\n")) {
			if len(bytes.TrimSpace(ev)) == 0 {
				continue
			}
			data, ok := bytes.CutPrefix(ev, []byte("event: message\ndata: "))
			if !ok || !json.Valid(data) || bytes.Contains(data, []byte("\n")) {
				t.Fatalf("not one event of one JSON value: %q", ev)
			}
		}
	})
}
