package events

import (
	"encoding/json"
	"testing"
)

// benchEvent is a typical event: ~12 fields set, 3 short attributes.
func benchEvent() Event {
	e := sample()
	e.Attrs = AttrsOf(map[string]string{"tool": "regex_text_search", "reason": "capability fs.read granted", "args": `{"pattern":"foo.*bar","max":50}`})
	return e
}

func BenchmarkCodec(b *testing.B) {
	e := benchEvent()
	bin := Encode(&e)
	js, _ := json.Marshal(e)
	b.Run("encode=binary", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			buf = appendEncode(buf[:0], &e)
		}
		b.ReportMetric(float64(len(bin)), "bytes/event")
	})
	b.Run("encode=json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(&e); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(js)), "bytes/event")
	})
	b.Run("decode=binary", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Decode(bin); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode=json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var out Event
			if err := json.Unmarshal(js, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkEmitPath is the producer-side cost of one event: fill, redact,
// validate (Emit without the queue).
func BenchmarkRedact(b *testing.B) {
	r := NewRedactor([]byte("0123456789abcdef"))
	r.Register("a-registered-secret-value")
	e := benchEvent()
	b.ReportAllocs()
	for b.Loop() {
		ev := e
		r.Redact(&ev)
	}
}
