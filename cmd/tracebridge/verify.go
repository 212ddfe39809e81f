package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/store"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runVerify(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("verify")
	var files stringList
	fs.Var(&files, "checkpoint", "also check against the exported checkpoint `FILE` (repeatable)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	archive := fs.String("archive", "", "also check the archive in `DIR` (segments, signatures, links) and that the log continues it")
	repair := fs.Bool("repair-journal", false, "when the journal is damaged (appends refused, saying so): apply what is readable before the damage, keep the damaged file beside the log, start a new journal and record what was lost (log.journal.repaired); no other tracebridge process may run")
	if err := m.parse(fs, "verify [--checkpoint FILE]... [--archive DIR] [--json] [--repair-journal]\n\nChecks the whole log: seqs without gaps, each record's hash and its link to\nthe one before, the recorded head, and the data dir's checkpoint.json plus\nany exported checkpoints (which expose truncation and rollback to an older\ncopy). Exits 0 when intact, 1 with the first bad seq otherwise, or when the\nlog refuses appends (disk full, broken chain, a damaged journal), saying since\nwhen and why. Asks the running hub, or reads the store itself when none runs.", args); err != nil {
		return err
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir.Store()); err != nil {
		return fmt.Errorf("no event log at %s (%v); nothing to verify", dir.Store(), err)
	}
	if *repair {
		if err := m.repairJournal(ctx, dir); err != nil {
			return err
		}
	}
	trusted, err := dir.PublicKey()
	if err != nil {
		return err
	}
	var cps []store.Checkpoint
	if cp, err := store.ReadCheckpoint(dir.Checkpoint(), trusted); err == nil {
		cps = append(cps, cp)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("the data dir's checkpoint cannot be trusted: %w", err)
	}
	for _, f := range files {
		cp, err := store.ReadCheckpoint(f, trusted)
		if err != nil {
			return err
		}
		cps = append(cps, cp)
	}
	node, err := m.open(ctx, hub.Read, "verify")
	if err != nil {
		return err
	}
	defer node.Close()
	rep, err := node.Verify(ctx, cps...)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		fmt.Fprintln(m.Stdout, rep)
	}
	if *archive != "" {
		ar, err := node.VerifyArchive(ctx, *archive)
		if err != nil {
			return err
		}
		if *asJSON {
			json.NewEncoder(m.Stdout).Encode(ar)
		} else {
			fmt.Fprintln(m.Stdout, ar)
		}
		if !ar.OK() {
			return errFound
		}
	}
	if !rep.Healthy() {
		return errFound
	}
	return nil
}

// repairJournal sets a damaged journal aside (store.RepairJournal) and
// records what it did in the log, as the operator.
func (m *Main) repairJournal(ctx context.Context, dir hub.DataDir) error {
	r, err := store.RepairJournal(dir.Store(), m.Now())
	if errors.Is(err, store.ErrLocked) {
		return fmt.Errorf("the log is open in another tracebridge process: stop them all (hub, mcp, host, up), then run verify --repair-journal again")
	}
	if err != nil {
		return err
	}
	if r == nil {
		fmt.Fprintln(m.Stderr, "verify: the journal is not damaged: nothing to repair")
		return nil
	}
	lost := "events acknowledged after seq " + fmt.Sprint(r.Applied) + " that were only in the journal are lost"
	fmt.Fprintf(m.Stderr, "verify: repaired: %v. Applied up to seq %d; the damaged journal is kept at %s; %s.\n", r.Damage, r.Applied, r.Kept, lost)
	node, err := m.open(ctx, hub.Elect, "verify")
	if err != nil {
		return err
	}
	defer node.Close()
	em, err := m.emitter(dir, node, m.logger())
	if err != nil {
		return err
	}
	em.Emit(events.Event{Kind: events.KindJournalRepaired, Outcome: events.OK,
		Attrs: events.A("damage", r.Damage.Error(), "applied", fmt.Sprint(r.Applied), "kept", r.Kept, "lostFrom", fmt.Sprint(r.Applied+1))})
	return em.Close(ctx)
}
