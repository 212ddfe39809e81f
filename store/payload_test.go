package store

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

// Values of 1 KiB to 8 MiB emitted through an emitter that keeps payloads
// are stored whole (redacted), referred to by hash, and verified; the store
// refuses a reference to a payload it does not hold.
func TestPayloadsAreKeptWholeAndVerified(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	red := events.NewRedactor([]byte("0123456789abcdef0123456789abcdef"))
	canary := "zqPayloadCanary" + strings.Repeat("7", 20)
	red.Register(canary)
	em := events.NewEmitter(s, events.EmitterOptions{Redactor: red, Payloads: s, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer em.Close(ctx)
	req := testIDs.New()
	sizes := []int{1 << 10, 64 << 10, 1 << 20, 8 << 20}
	for i, n := range sizes {
		e := ev(req, i)
		v := strings.Repeat("a", n/2) + canary + strings.Repeat("b", n-n/2-len(canary))
		e.Attrs.Set("answer", v)
		e.ID = events.ID{}
		em.Emit(e)
	}
	lookalike := "[PAYLOAD:sha256=" + strings.Repeat("0", 64) + ":size=3]" // a hostile answer spelling a reference
	e := ev(req, 9)
	e.ID = events.ID{}
	e.Attrs.Set("answer", lookalike)
	em.Emit(e)
	if err := em.Flush(ctx, req); err != nil {
		t.Fatal(err)
	}
	got, err := s.ByRequest(req)
	if err != nil || len(got) != len(sizes)+1 {
		t.Fatalf("%d events, %v", len(got), err)
	}
	for i, n := range sizes {
		a := got[i].Attrs.Get("answer")
		_, size, isRef := events.ParseRef(a)
		if (n > events.MaxAttrLen) != isRef {
			t.Fatalf("a %d-byte value is stored as %.80q", n, a)
		}
		whole, err := events.Resolve(ctx, s, got[i])
		if err != nil {
			t.Fatal(err)
		}
		w := whole.Attrs.Get("answer")
		if strings.Contains(w, canary) || !strings.Contains(w, "[REDACTED:") || len(w) < n-len(canary) {
			t.Fatalf("the %d-byte value came back as %d bytes, redacted %v", n, len(w), !strings.Contains(w, canary))
		}
		if isRef && size != len(w) {
			t.Fatalf("the reference says %d bytes, the payload has %d", size, len(w))
		}
	}
	back, err := events.Resolve(ctx, s, got[len(sizes)])
	if err != nil || back.Attrs.Get("answer") != lookalike {
		t.Fatalf("a value spelled like a reference did not come back as itself: %q %v", back.Attrs.Get("answer"), err)
	}
	raw, _ := os.ReadFile(s.Path())
	if strings.Contains(string(raw), canary) {
		t.Fatal("the canary is in the store file")
	}

	forged := ev(req, 10)
	forged.Attrs.Set("answer", events.RefOf(events.Hash{1, 2, 3}, 5000))
	_, err = s.Append(ctx, []events.Event{forged})
	var rej *events.Err
	if !errors.As(err, &rej) || rej.Code != events.CodePayloadMissing {
		t.Fatalf("an event referring to a payload not stored was %v", err)
	}
}

// A payload edited or deleted under the log is what verify reports, at the
// first event that refers to it.
func TestVerifyFindsEditedAndMissingPayloads(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		harm       func(b *bolt.Bucket, k []byte) error
	}{
		{"edited", "does not hash to its reference", func(b *bolt.Bucket, k []byte) error {
			v := []byte(string(b.Get(k)))
			v[100] ^= 1
			return b.Put(k, v)
		}},
		{"deleted", "which is not stored", func(b *bolt.Bucket, k []byte) error { return b.Delete(k) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "events.db")
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			req := testIDs.New()
			p := strings.Repeat("payload ", 1000)
			if err := s.PutPayloads(ctx, []string{p, p}); err != nil { // twice: one copy
				t.Fatal(err)
			}
			evs := []events.Event{ev(req, 1), ev(req, 2)}
			evs[1].Attrs.Set("answer", events.PayloadRef(p))
			if _, err := s.Append(ctx, evs); err != nil {
				t.Fatal(err)
			}
			if rep, err := s.Verify(); err != nil || !rep.OK() {
				t.Fatalf("before: %v %v", rep, err)
			}
			sum, _, _ := events.ParseRef(events.PayloadRef(p))
			if err := s.update(func(tx *bolt.Tx) error {
				return tc.harm(tx.Bucket(bucketPayloads), sum[:])
			}); err != nil {
				t.Fatal(err)
			}
			rep, err := s.Verify()
			if err != nil || rep.OK() || rep.FirstBad != 2 || !strings.Contains(rep.Problem, tc.want) {
				t.Fatalf("verify after the payload was %s: %v %v", tc.name, rep, err)
			}
			s.Close()
		})
	}
}

// Without a payload store, an emitter cuts long values as before, and
// marks a value spelled like a reference as a literal, so no event it
// sends refers to a payload.
func TestEmitterWithoutPayloadsCutsAndMarks(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	em := events.NewEmitter(s, events.EmitterOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer em.Close(ctx)
	req := testIDs.New()
	long, ref := ev(req, 1), ev(req, 2)
	long.ID, ref.ID = events.ID{}, events.ID{}
	long.Attrs.Set("answer", strings.Repeat("x", 10000))
	ref.Attrs.Set("answer", events.PayloadRef("something"))
	em.Emit(long)
	em.Emit(ref)
	if err := em.Flush(ctx, req); err != nil {
		t.Fatal(err)
	}
	got, _ := s.ByRequest(req)
	if a := got[0].Attrs.Get("answer"); !strings.Contains(a, "TRUNCATED") {
		t.Fatalf("long value: %.80q", a)
	}
	if a := got[1].Attrs.Get("answer"); !strings.HasPrefix(a, "(literal) ") || len(got[1].Refs()) != 0 {
		t.Fatalf("reference-like value: %q", a)
	}
}

// A value over the payload limit is cut on record: TooLarge, its size and
// the limit, never silently.
func TestValueOverThePayloadLimitSaysTooLarge(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	em := events.NewEmitter(s, events.EmitterOptions{Payloads: s, MaxPayload: 100 << 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer em.Close(ctx)
	req := testIDs.New()
	e := ev(req, 1)
	e.ID = events.ID{}
	e.Attrs.Set("answer", strings.Repeat("y", 200<<10))
	em.Emit(e)
	if err := em.Flush(ctx, req); err != nil {
		t.Fatal(err)
	}
	got, _ := s.ByRequest(req)
	a := got[0].Attrs.Get("answer")
	if !strings.Contains(a, "[TooLarge:size=204800:") || !strings.Contains(a, ":limit=102400]") {
		t.Fatalf("over the limit: %q", a[max(0, len(a)-200):])
	}
}
