package hub

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tracebridge/tracebridge/events"
)

// An attached process stores payloads of up to 8 MiB through the hub's bus
// and reads them back; events referring to them are taken, the log
// verifies, and a reference to a payload nobody stored is refused.
func TestPayloadsTravelThroughTheHub(t *testing.T) {
	ctx := context.Background()
	dir := newDir(t)
	a := open(t, dir, Elect)
	b := open(t, dir, Elect)
	if b.IsHub() || !b.KeepsPayloads() {
		t.Fatal("the second node should be attached and keep payloads")
	}
	small, big := strings.Repeat("s", 5000), strings.Repeat("0123456789abcdef", 512<<10) // 8 MiB
	if err := b.PutPayloads(ctx, []string{small, big}); err != nil {
		t.Fatal(err)
	}
	req := events.NewID()
	e1, e2 := evt(req, 1), evt(req, 2)
	e1.Attrs.Set("answer", events.PayloadRef(small))
	e2.Attrs.Set("answer", events.PayloadRef(big))
	if _, err := b.Append(ctx, []events.Event{e1, e2}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []*Node{a, b} {
		got, err := n.ByRequest(ctx, req)
		if err != nil || len(got) != 2 {
			t.Fatalf("%d events, %v", len(got), err)
		}
		whole, err := events.Resolve(ctx, n, got[1])
		if err != nil || whole.Attrs.Get("answer") != big {
			t.Fatalf("the 8 MiB payload read back as %d bytes, %v", len(whole.Attrs.Get("answer")), err)
		}
	}
	if _, err := b.Payload(ctx, events.Hash{9}); !errors.Is(err, events.ErrNoPayload) {
		t.Fatalf("a payload nobody stored: %v", err)
	}
	forged := evt(req, 3)
	forged.Attrs.Set("answer", events.RefOf(events.Hash{7}, 4097))
	var rej *events.Err
	if _, err := b.Append(ctx, []events.Event{forged}); !errors.As(err, &rej) || rej.Code != events.CodePayloadMissing {
		t.Fatalf("a reference to no payload: %v", err)
	}
	if rep, err := b.Verify(ctx); err != nil || !rep.OK() {
		t.Fatalf("verify: %v %v", rep, err)
	}
}

// FuzzDecodePayloads: the payload frame decoder never panics, never takes
// more than the frame holds, and reads back what was encoded.
func FuzzDecodePayloads(f *testing.F) {
	f.Add(encodePayloads([]string{"a", strings.Repeat("b", 300)}))
	f.Add([]byte{0x02, 0x01, 'x'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		ps, err := decodePayloads(b)
		if err != nil {
			return
		}
		total := 0
		for _, p := range ps {
			total += len(p)
		}
		if total > len(b) {
			t.Fatalf("%d payload bytes out of a %d-byte frame", total, len(b))
		}
		again, err := decodePayloads(encodePayloads(ps))
		if err != nil || len(again) != len(ps) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// Bad payload parts on the bus get coded answers and store nothing: a part
// out of order (or of an upload the hub dropped) is HubUnavailable, which
// the sender takes as "send again"; parts that do not hash to the sum they
// claim, or headers that lie, are MalformedAppend.
func TestBadPayloadPartsGetCodedErrors(t *testing.T) {
	dir := newDir(t)
	a := open(t, dir, Elect)
	nc := busConn(t, dir)
	sum := strings.Repeat("ab", 32)
	part := func(upload, size, off string, data []byte) events.Code {
		m := nats.NewMsg(subjPayloadPart)
		m.Header.Set(hdrSum, sum)
		m.Header.Set(hdrUpload, upload)
		m.Header.Set(hdrSize, size)
		m.Header.Set(hdrOffset, off)
		m.Data = data
		r, err := nc.RequestMsg(m, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return events.Code(r.Header.Get(hdrCode))
	}
	for _, tc := range []struct {
		name              string
		upload, size, off string
		data              []byte
		want              events.Code
	}{
		{"out of order", "u1", "10", "5", []byte("12345"), events.CodeHubUnavailable},
		{"past its size", "u2", "4", "0", []byte("12345"), events.CodeMalformedAppend},
		{"no upload id", "", "5", "0", []byte("12345"), events.CodeMalformedAppend},
		{"size over the limit", "u3", "999999999", "0", []byte("1"), events.CodeMalformedAppend},
		{"does not hash to its sum", "u4", "5", "0", []byte("12345"), events.CodeMalformedAppend},
	} {
		if got := part(tc.upload, tc.size, tc.off, tc.data); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	var h events.Hash
	h.UnmarshalText([]byte(sum))
	if _, err := a.Payload(context.Background(), h); !errors.Is(err, events.ErrNoPayload) {
		t.Fatalf("a payload was stored from bad parts: %v", err)
	}
}
