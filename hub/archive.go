package hub

import (
	"context"
	"errors"

	"github.com/tracebridge/tracebridge/store"
)

// Archive moves the events up to seq upTo into a sealed segment in dir and
// drops them from the store (store.ArchiveTo), after catching the
// projections up past them so none has to rebuild from the archive. It
// runs only in the hub process, which holds the store; step, when set, is
// called after each step (failpoints in tests).
func (n *Node) Archive(ctx context.Context, dir string, upTo uint64, step func(string)) (store.Segment, error) {
	b, err := n.link(ctx)
	if err != nil {
		return store.Segment{}, err
	}
	l, ok := b.(*local)
	if !ok || l.hub == nil || l.key == nil {
		return store.Segment{}, errors.New("archiving needs the hub's own process: stop the other tracebridge processes of this data dir (serve, up, bridges), or let [retention] in the configuration of the process holding the hub do it")
	}
	if _, err := l.hub.proj.CatchUp(ctx, nil); err != nil {
		return store.Segment{}, err
	}
	return l.st.ArchiveTo(dir, upTo, l.key, l.now(), step)
}

// VerifyArchive checks an archive against the store (store.VerifyArchive),
// with the data dir's checkpoint key.
func (n *Node) VerifyArchive(ctx context.Context, dir string) (store.ArchiveReport, error) {
	b, err := n.link(ctx)
	if err != nil {
		return store.ArchiveReport{}, err
	}
	l, ok := b.(*local)
	if !ok {
		return store.ArchiveReport{}, errors.New("verify --archive reads the store itself: run it when no hub runs for the data dir, or in the hub's process")
	}
	pub, _ := n.opts.Dir.PublicKey()
	return l.st.VerifyArchive(dir, pub)
}
