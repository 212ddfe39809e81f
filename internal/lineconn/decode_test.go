package lineconn

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":"a","result":{"content":[]}}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"bad","data":{"x":1}}}`,
	`{"jsonrpc":"2.0","id":7,"error":null,"result":null}`,
	`{"jsonrpc":"2.0","id":null,"method":"m","params":null}`,
	`{"jsonrpc":"1.0","id":1,"method":"m"}`,
	`{"id":1,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1}`,
	`{"jsonrpc":"2.0","result":{}}`,
	`{"jsonrpc":"2.0","id":true,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1.5,"method":"m"}`,
	`{"jsonrpc":"2.0","id":1e3,"method":"m"}`,
	`{"JSONRPC":"2.0","ID":1,"Method":"m"}`,
	`{"jsonrpc":"2.0","id":1,"method":5}`,
	`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`,
	`[{"jsonrpc":"2.0","id":1,"method":"m"}]`,
	`null`, `{}`, `"x"`, `{"jsonrpc":"2.0","id":1,"method":"m"} x`, ``,
}

// Decode answers as the SDK's own decoder does: the same message, or an
// error where it errs.
func TestDecodeAgreesWithTheSDK(t *testing.T) {
	for _, s := range decodeSeeds {
		agree(t, []byte(s))
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(agree)
}

// agree holds for one JSON value (what the connection hands Decode; the
// SDK's decoder ignores what follows a value, the stream's check does not).
func agree(t *testing.T, data []byte) {
	got, gerr := Decode(data)
	if !json.Valid(data) {
		if gerr == nil {
			t.Fatalf("%q is not JSON, yet Decode made %#v of it", data, got)
		}
		return
	}
	want, werr := jsonrpc.DecodeMessage(data)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: the SDK says %v, Decode says %v", data, werr, gerr)
	}
	if werr == nil && !reflect.DeepEqual(normal(want), normal(got)) {
		t.Fatalf("%q: the SDK decodes %#v, Decode %#v", data, want, got)
	}
}

// normal makes an empty raw value and a missing one the same.
func normal(m jsonrpc.Message) jsonrpc.Message {
	switch v := m.(type) {
	case *jsonrpc.Request:
		c := *v
		if len(c.Params) == 0 {
			c.Params = nil
		}
		return &c
	case *jsonrpc.Response:
		c := *v
		if len(c.Result) == 0 {
			c.Result = nil
		}
		if e, ok := c.Error.(*jsonrpc.Error); ok && len(e.Data) == 0 {
			n := *e
			n.Data = nil
			c.Error = &n
		}
		return &c
	}
	return m
}

// members holds what json.Unmarshal into a map holds under the wire keys,
// and errs where it errs.
func FuzzMembers(f *testing.F) {
	for _, s := range append(decodeSeeds, ` { "id" : 1 , "\u0069d" : [1,{"a":"}"}] , "x":"\"" } `, `{"method":"a\"b","params":{"k":[]}}`) {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, gerr := members(data)
		var want map[string]json.RawMessage
		werr := json.Unmarshal(data, &want)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("%q: Unmarshal says %v, members %v", data, werr, gerr)
		}
		if werr != nil {
			return
		}
		for _, k := range wireKeys {
			w, wok := want[k]
			g, gok := got[k]
			if wok != gok || string(w) != string(g) {
				t.Fatalf("%q: key %s: Unmarshal %q (%v), members %q (%v)", data, k, w, wok, g, gok)
			}
		}
		if (want == nil) != (got == nil) {
			t.Fatalf("%q: Unmarshal's map nil %v, members' %v", data, want == nil, got == nil)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	msg := []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"noop__echo","arguments":{"text":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1"},"progressToken":3}}}`)
	for b.Loop() {
		if _, err := Decode(msg); err != nil {
			b.Fatal(err)
		}
	}
}
