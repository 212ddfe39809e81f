// Package projtest gives tests the invariant every log with projections
// keeps: the views kept as the events arrived equal the views rebuilt from
// the log (replay's fold proves it for runs; this, for every projection
// of every test that records through a hub).
package projtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/store"
)

// CheckRebuild opens the store file at path (its writer closed), brings
// its projections up to date as a hub would on start, and fails t when a
// view differs from a rebuild from seq 1, naming the view and the first
// key that differs.
func CheckRebuild(t testing.TB, path string) {
	t.Helper()
	st, err := store.Open(path, store.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Errorf("projtest: open %s: %v", path, err)
		return
	}
	defer st.Close()
	ctx := context.Background()
	p := projections.New(st)
	if _, err := p.CatchUp(ctx, nil); err != nil {
		t.Errorf("projtest: catch up: %v", err)
		return
	}
	kept, err := Snapshot(st)
	if err != nil {
		t.Errorf("projtest: %v", err)
		return
	}
	if _, err := p.Rebuild(ctx, nil, nil); err != nil {
		t.Errorf("projtest: rebuild: %v", err)
		return
	}
	rebuilt, err := Snapshot(st)
	if err != nil {
		t.Errorf("projtest: %v", err)
		return
	}
	for _, name := range projections.Names() {
		if d := firstDifference(kept[name], rebuilt[name]); d != "" {
			t.Errorf("invariant: view %s kept as the events arrived differs from its rebuild: %s", name, d)
		}
	}
}

// pair is one key and value of a view.
type pair struct{ k, v []byte }

// Snapshot reads every projection's view whole, in key order.
func Snapshot(st *store.Store) (map[string][]pair, error) {
	out := map[string][]pair{}
	err := st.ReadViews(func(tx store.ViewTx) error {
		for _, name := range projections.Names() {
			v, err := tx.View(name)
			if err != nil {
				return err
			}
			if err := v.ForEach(func(k, val []byte) error {
				out[name] = append(out[name], pair{bytes.Clone(k), bytes.Clone(val)})
				return nil
			}); err != nil {
				return fmt.Errorf("view %s: %w", name, err)
			}
		}
		return nil
	})
	return out, err
}

// firstDifference says where a and b first differ ("" when equal).
func firstDifference(a, b []pair) string {
	for i := 0; i < len(a) || i < len(b); i++ {
		switch {
		case i >= len(a):
			return fmt.Sprintf("the rebuild has key %q more (%d keys kept, %d rebuilt)", b[i].k, len(a), len(b))
		case i >= len(b):
			return fmt.Sprintf("key %q was kept, not rebuilt (%d keys kept, %d rebuilt)", a[i].k, len(a), len(b))
		case !bytes.Equal(a[i].k, b[i].k):
			return fmt.Sprintf("key %q kept where the rebuild has %q", a[i].k, b[i].k)
		case !bytes.Equal(a[i].v, b[i].v):
			return fmt.Sprintf("key %q:\n  kept    %s\n  rebuilt %s", a[i].k, clip(a[i].v), clip(b[i].v))
		}
	}
	return ""
}

func clip(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "…"
	}
	return string(b)
}
