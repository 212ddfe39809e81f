package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"
)

func sample() Event {
	ids := NewIDSource(func() time.Time { return time.Unix(1750000000, 0) }, bytes.NewReader(bytes.Repeat([]byte{7}, 1024)))
	return Event{
		ID: ids.New(), Seq: 42, Time: time.Unix(1750000000, 123456789).UTC(),
		Kind: KindPolicyDecided, Boundary: BoundaryPolicy, From: Executor, To: Policy,
		RequestID: ids.New(), OperationID: ids.New(), SessionID: ids.New(),
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		Outcome:     Denied, Code: CodePolicyDenied, DurationMs: 0.25,
		Attrs: AttrsOf(map[string]string{"tool": "regex_text_search", "reason": "capability fs.write not granted", "é": "ü\x00"}),
		Prev:  Hash{1, 2, 3}, Hash: Hash{9, 8, 7},
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, e := range []Event{sample(), {}, {Kind: "x", Attrs: AttrsOf(map[string]string{})}} {
		b := Encode(&e)
		got, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(e.Attrs) == 0 {
			e.Attrs = nil
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, e)
		}
		if !bytes.Equal(Encode(&got), b) {
			t.Fatal("re-encoding the decoded event changed its bytes")
		}
	}
}

func TestEncodingIsDeterministic(t *testing.T) {
	e := sample()
	first := Encode(&e)
	for i := 0; i < 50; i++ { // map iteration order varies run to run
		if !bytes.Equal(Encode(&e), first) {
			t.Fatal("same event, different bytes")
		}
	}
}

func TestDecodeRejectsDamage(t *testing.T) {
	e := sample()
	good := Encode(&e)
	body, _, _, _ := SplitRecord(good)
	tests := map[string][]byte{
		"empty":            nil,
		"short":            good[:10],
		"wrong version":    append([]byte{2}, good[1:]...),
		"trailing byte":    append(append(append([]byte{}, body...), 0), good[len(body):]...),
		"truncated body":   append(append([]byte{}, body[:len(body)-3]...), good[len(body):]...),
		"oversized":        make([]byte, MaxEventSize+chainLen+1),
		"unsorted attrs":   unsortedAttrs(),
		"unknown flag bit": withFlags(good, 0x80),
		"non-minimal seq":  append([]byte{1, 0xaa, 0x00}, good[2:]...), // 42 spelled in two bytes
	}
	for name, b := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := Decode(b); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Decode = %v, want ErrMalformed", err)
			}
		})
	}
}

func unsortedAttrs() []byte {
	e := Event{Kind: "k", Attrs: AttrsOf(map[string]string{"a": "1", "b": "2"})}
	b := Encode(&e)
	i := bytes.Index(b, []byte{1, 'a', 1, '1', 1, 'b', 1, '2'})
	copy(b[i:], []byte{1, 'b', 1, '2', 1, 'a', 1, '1'})
	return b
}

func withFlags(rec []byte, f byte) []byte {
	b := bytes.Clone(rec)
	b[1+1+16] |= f // version, seq 42 (one byte), id
	return b
}

func TestBatchRoundTripAndCaps(t *testing.T) {
	evs := []Event{sample(), sample()}
	evs[1].Attrs = nil
	got, err := DecodeBatch(EncodeBatch(evs))
	if err != nil || len(got) != 2 || got[0].Attrs.Get("tool") != "regex_text_search" {
		t.Fatalf("batch round trip: %v %v", got, err)
	}
	if _, err := DecodeBatch([]byte{1, 0x80, 0x80, 0x80, 0x80, 0x01}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("a batch claiming 2^28 events: %v", err)
	}
	if _, err := DecodeBatch(make([]byte, MaxBatchBytes+1)); !errors.Is(err, ErrMalformed) {
		t.Fatalf("an oversized batch: %v", err)
	}
}

func TestJSONFormUsesDesignFieldNames(t *testing.T) {
	e := sample()
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"id", "seq", "time", "kind", "boundary", "from", "to", "requestId", "operationId", "sessionId", "traceparent", "outcome", "code", "durationMs", "attrs", "prev", "hash"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q: %s", k, b)
		}
	}
	if _, ok := m["parentId"]; ok {
		t.Errorf("zero parentId should be omitted: %s", b)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, e) {
		t.Fatalf("JSON round trip: %v\n%+v", err, back)
	}
}

func FuzzDecode(f *testing.F) {
	e := sample()
	f.Add(Encode(&e))
	f.Add(Encode(&Event{}))
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		ev, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if id, ok := RecordID(b); !ok || id != ev.ID {
			t.Fatalf("RecordID = %v, %v; the record decodes with id %v", id, ok, ev.ID)
		}
		// Whatever decodes re-encodes to the same bytes: the encoding is
		// canonical, so no two byte strings mean the same event.
		if !bytes.Equal(Encode(&ev), b) {
			t.Fatalf("decoded %x but re-encodes to %x", b, Encode(&ev))
		}
	})
}

func FuzzDecodeBatch(f *testing.F) {
	e := sample()
	f.Add(EncodeBatch([]Event{e, {}}))
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, err := DecodeBatch(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		if !bytes.Equal(EncodeBatch(evs), b) {
			t.Fatal("batch is not canonical")
		}
	})
}
