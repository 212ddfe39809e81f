package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// BenchmarkProposal1MiB is create + approve + apply of a one-line edit to a
// 1 MiB file: read and hash twice, compute the new content, durable intent
// (an fsynced commit), a synced journal, temp file + rename, state saved.
func BenchmarkProposal1MiB(b *testing.B) {
	root := b.TempDir()
	line := strings.Repeat("x", 100) + "\n"
	body := "marker 0\n" + strings.Repeat(line, (1<<20)/len(line))
	os.WriteFile(filepath.Join(root, "big.txt"), []byte(body), 0o644)
	ws, err := OpenWorkspace(root)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	st, err := store.Open(filepath.Join(b.TempDir(), "events.db"), store.Options{Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	em := events.NewEmitter(st, events.EmitterOptions{Logger: quiet})
	defer em.Close(context.Background())
	props, err := OpenProposals(ws, em, filepath.Join(b.TempDir(), "state"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	for i := 0; b.Loop(); i++ {
		pr, err := props.Create(em.NewID().String(), "", []FileChange{{Path: "big.txt",
			Edits: []Edit{{Original: fmt.Sprintf("marker %d\n", i), Replacement: fmt.Sprintf("marker %d\n", i+1)}}}})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := props.Decide(pr.ID, true, pr.ContentHash, "bench"); err != nil {
			b.Fatal(err)
		}
		if _, err := props.Apply(context.Background(), pr.ID); err != nil {
			b.Fatal(err)
		}
	}
}
