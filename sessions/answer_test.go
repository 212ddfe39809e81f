package sessions

import (
	"strings"
	"testing"
)

func TestAnswerDiff(t *testing.T) {
	long := strings.Repeat("evidence ", 100)
	for _, c := range []struct {
		name, want, got, at, w, g string
	}{
		{name: "same", want: `{"result":{"a":1}}`, got: `{"result":{"a":1}}`},
		{name: "ids, times, redaction keys, _meta and durations are not behaviour",
			want: `{"result":{"_meta":{"tracebridge/requestId":"01M8A9C96G5ACKEEYGWHYSQQBY"},"text":"run 01M8A9C96G5ACKEEYGWHYSQQBY at 2026-11-25T21:21:53.878990886Z took {\"durationMs\":1.053} [REDACTED:secret:0a1b2c3d]","waitMs":12}}`,
			got:  `{"result":{"text":"run 01JZZZZZZZZZZZZZZZZZZZZZZZ at 2026-01-01T00:00:00Z took {\"durationMs\":0} [REDACTED:secret:ffffffff]","waitMs":0}}`},
		{name: "a trace tool quoting the replayed request's JSON-RPC id is not behaviour (the re-drive's client numbers its own)",
			want: `{"result":{"content":[{"text":"{\"method\":\"tools/call\",\"jsonrpcId\":\"2\"}"}]}}`,
			got:  `{"result":{"content":[{"text":"{\"method\":\"tools/call\",\"jsonrpcId\":\"3\"}"}]}}`},
		{name: "another field of it is",
			want: `{"result":{"content":[{"text":"{\"method\":\"tools/call\",\"jsonrpcId\":\"2\"}"}]}}`,
			got:  `{"result":{"content":[{"text":"{\"method\":\"tools/list\",\"jsonrpcId\":\"3\"}"}]}}`,
			at:   "result.content[0].text", w: `"{\"method\":\"tools/call\",\"jsonrpcId\":\"\u003cn\u003e\"}"`},
		{name: "a new build's version is not behaviour",
			want: `{"result":{"serverInfo":{"name":"tracebridge","version":"dev"}}}`, got: `{"result":{"serverInfo":{"name":"tracebridge","version":"v0.9.0"}}}`},
		{name: "a text", want: `{"result":{"content":[{"text":"a"}]}}`, got: `{"result":{"content":[{"text":"b"}]}}`,
			at: "result.content[0].text", w: `"a"`, g: `"b"`},
		{name: "a key more", want: `{"result":{}}`, got: `{"result":{"isError":true}}`, at: "result.isError", w: "(none)", g: "true"},
		{name: "an item less", want: `{"result":{"content":[1,2]}}`, got: `{"result":{"content":[1]}}`, at: "result.content", w: "2 items", g: "1 items"},
		{name: "an error instead", want: `{"result":{}}`, got: `{"error":{"code":-32603,"message":"x"}}`, at: "error", w: "(none)"},
		{name: "a long text shows where it differs", want: `{"result":"` + long + `one"}`, got: `{"result":"` + long + `two"}`,
			at: "result (from byte 860)", w: `"nce evidence evidence evidence evidence one"`, g: `"nce evidence evidence evidence evidence two"`},
		{name: "no answer", want: `{"result":{}}`, got: ``, at: "the answer", w: `{"result":{}}`, g: "not JSON: "},
	} {
		at, w, g := answerDiff(c.want, c.got)
		if at != c.at || w != c.w || (c.g != "" && g != c.g) {
			t.Errorf("%s: got %q %q %q, want %q %q %q", c.name, at, w, g, c.at, c.w, c.g)
		}
	}
}
