package store

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tracebridge/tracebridge/internal/durable"
)

// JournalRepair is what RepairJournal did with a damaged journal.
type JournalRepair struct {
	Damage  *JournalDamage
	Applied uint64 // the log's head after the readable frames were applied
	Kept    string // where the damaged journal is now

	at time.Time // names the kept file
}

// RepairJournal opens the log at path, which must not be open elsewhere,
// when its journal is damaged (*JournalDamage): the frames before the
// damage are applied, the damaged file is kept beside the log
// (events.db.journal.damaged-TIME) and a new journal starts. What it did
// is returned, nil when the journal was not damaged; the caller records it
// in the log. Events that were only past the damage are lost: the repair
// says which seqs from.
func RepairJournal(path string, now time.Time) (*JournalRepair, error) {
	r := &JournalRepair{at: now}
	s, err := Open(path, Options{repair: r, Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	if err := s.Close(); err != nil {
		return nil, err
	}
	if r.Damage == nil {
		return nil, nil
	}
	return r, nil
}

// keepDamaged moves the damaged journal aside, durably, so the writer
// starts a new one (the readable frames before the damage are applied).
func (s *Store) keepDamaged(dmg *JournalDamage) error {
	kept := journalPath(s.path) + ".damaged-" + s.opts.repair.at.UTC().Format("20060102T150405Z")
	if err := os.Rename(journalPath(s.path), kept); err != nil {
		return fmt.Errorf("keep the damaged journal: %w", err)
	}
	if err := durable.SyncDir(filepath.Dir(s.path)); err != nil {
		return err
	}
	s.opts.repair.Damage, s.opts.repair.Applied, s.opts.repair.Kept = dmg, s.head, kept
	s.opts.Logger.Warn("store: the damaged journal was set aside", "path", s.path, "kept", kept, "head", s.head, "damage", dmg.Error())
	return nil
}
