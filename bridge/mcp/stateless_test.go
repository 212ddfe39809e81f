package mcp

import (
	"slices"
	"testing"
)

// The front door's checks of a sessionless request, in SEP-2575's order.
func TestStatelessChecks(t *testing.T) {
	meta := func(v string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v +
			`","io.modelcontextprotocol/clientCapabilities":{}}}}`
	}
	cases := []struct {
		name, header, body string
		stateless          bool
		code               int64 // 0: passes
	}{
		{"no header, no _meta: a session-era request", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, false, 0},
		{"a 2025 header without _meta: a session-era request", "2025-11-25", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, false, 0},
		{"well formed", "2026-07-28", meta("2026-07-28"), true, 0},
		{"no header", "", meta("2026-07-28"), true, codeHeaderMismatch},
		{"no _meta", "2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, true, -32602},
		{"no capabilities", "2026-07-28", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, true, -32602},
		{"header disagrees", "2026-07-28", meta("2027-01-01"), true, codeHeaderMismatch},
		{"a version not served", "2099-01-01", meta("2099-01-01"), true, codeUnsupportedVersion},
	}
	for _, c := range cases {
		m := readStatelessMeta([]byte(c.body))
		if got := statelessRequest(c.header, m); got != c.stateless {
			t.Errorf("%s: stateless %v, want %v", c.name, got, c.stateless)
			continue
		}
		if !c.stateless {
			continue
		}
		ref := checkStateless(c.header, m)
		switch {
		case c.code == 0 && ref != nil:
			t.Errorf("%s: refused %d %s", c.name, ref.code, ref.msg)
		case c.code != 0 && (ref == nil || ref.code != c.code):
			t.Errorf("%s: %+v, want code %d", c.name, ref, c.code)
		}
	}
	for line, want := range map[string]int{
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"m"}}`:                     404,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32021,"message":"m"}}`:                     400,
		`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"m"}}`:                     200,
		`{"jsonrpc":"2.0","id":1,"result":{}}`:                                               200,
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"\"error\""}]}}`: 200,
	} {
		if got := statelessStatus([]byte(line)); got != want {
			t.Errorf("%s: HTTP %d, want %d", line, got, want)
		}
	}
}

// Whatever a request's body and header, the checks decide without
// panicking, and what they pass names a served version in both.
func FuzzStatelessMeta(f *testing.F) {
	f.Add("2026-07-28", []byte(`{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
	f.Add("", []byte(`{"params":{"_meta":null}}`))
	f.Add("x", []byte(`{"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":1}}}`))
	f.Fuzz(func(t *testing.T, header string, body []byte) {
		m := readStatelessMeta(body)
		if !statelessRequest(header, m) {
			return
		}
		if checkStateless(header, m) == nil && (header != m.version || !slices.Contains(statelessVersions, m.version) || !m.hasCaps) {
			t.Fatalf("passed: header %q, meta %+v", header, m)
		}
	})
}

// readStatelessMeta is what the front door's stateless checks see of body.
func readStatelessMeta(body []byte) statelessMeta {
	m, _ := readFrontMessage(body)
	return m.statelessMeta()
}
