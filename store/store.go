package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/internal/durable"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"

	"github.com/tracebridge/tracebridge/events"
)

var (
	bucketEvents    = []byte("events")
	bucketIDs       = []byte("ids")
	bucketByRequest = []byte("by_request")
	bucketBySession = []byte("by_session")
	bucketMeta      = []byte("meta")

	keyHead   = []byte("head")   // seq (8) | hash (32)
	keySchema = []byte("schema") // uint32
)

// SchemaVersion is the layout this package reads and writes.
const SchemaVersion = 1

// ErrLocked means another process holds the store open.
var ErrLocked = errors.New("store is locked by another process")

// ErrClosed is returned by calls on a closed Store.
var ErrClosed = errors.New("store closed")

// Options configures Open. The zero value works.
type Options struct {
	// Timeout bounds the wait for the file lock. Zero: 100ms. The lock is
	// polled, so a call may return up to 50ms early.
	Timeout time.Duration
	// ReadOnly opens the file shared and read-only; Append then fails.
	ReadOnly bool
	// MaxBatch caps the events committed in one transaction. Zero: 4096.
	MaxBatch int
	// Logger receives the writer's fatal errors. Nil: slog.Default().
	Logger *slog.Logger
	// Committed, when set, is called by the writer after each commit, once
	// the appenders have their answer, with the newly stored events in seq
	// order and their records as stored (so they need not be encoded again).
	// It must not block or keep either slice past the call.
	Committed func(stored []events.Event, records [][]byte)

	// holdApply keeps acknowledged frames out of bbolt (tests: a crash
	// between the journal and the apply).
	holdApply bool
	// journalApplied: a read-only open right after a writable one applied
	// the journal.
	journalApplied bool
	// repair: a damaged journal's readable frames are applied and the file
	// is kept aside (RepairJournal).
	repair *JournalRepair
}

// Store is the event log. Its methods are safe for concurrent use.
type Store struct {
	db    *bolt.DB
	views *bolt.DB // the projections' file (views.go); nil: none yet (read-only)
	path  string
	opts  Options

	reqs   chan *appendReq
	done   chan struct{}
	sendMu sync.RWMutex // held shared while sending to reqs, exclusively to close it
	closed bool

	j  *journal    // the writer's; nil read-only
	w  writerState // the writer goroutine's
	ap *applier    // nil read-only

	amu     sync.Mutex // guards ap
	acond   *sync.Cond // on amu: broadcast when frames are applied or the applier fails
	drainMu sync.Mutex // one drain at a time

	mu      sync.RWMutex
	head    uint64 // the last seq acknowledged
	hash    events.Hash
	refusal *events.Err // set when the store must not be appended to
	full    *diskFull   // set while commits fail for want of space
}

// Open opens or creates the log at path.
func Open(path string, opts Options) (*Store, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = 100 * time.Millisecond
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 4096
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.ReadOnly {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout:         opts.Timeout,
		ReadOnly:        opts.ReadOnly,
		FreelistType:    bolt.FreelistMapType,
		InitialMmapSize: 1 << 30, // readers never wait for a remap below 1 GiB
	})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("open store %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db.NoSync = skipFsync // false in every real build
	if !opts.ReadOnly {
		// bbolt syncs the file, never its name: a log created here would
		// vanish in a power loss with everything acknowledged into it.
		if err := durable.SyncDir(filepath.Dir(path)); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: sync its directory: %w", path, err)
		}
	}
	s := &Store{db: db, path: path, opts: opts}
	s.acond = sync.NewCond(&s.amu)
	if err := s.guard(s.init); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if opts.ReadOnly && s.refusal == nil {
		// A read-only open cannot apply the journal: if it holds frames
		// bbolt does not (readable ones before damage too), open writable
		// once to apply them, then again.
		frames, err := pendingFrames(journalPath(path), s.head, s.hash)
		if len(frames) > 0 && !opts.journalApplied && (err == nil || isDamage(err)) {
			db.Close()
			w := opts
			w.ReadOnly = false
			ws, err := Open(path, w)
			if err != nil {
				return nil, err
			}
			if err := ws.Close(); err != nil {
				return nil, err
			}
			opts.journalApplied = true
			return Open(path, opts)
		}
		if err != nil {
			s.refuseJournal(err)
		}
	}
	if !opts.ReadOnly {
		if err := s.recover(); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
	}
	if s.views, err = openViews(ViewsPath(path), opts); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if !opts.ReadOnly {
		s.ap = &applier{wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1), done: make(chan struct{}), payloads: map[events.Hash]int{}}
		s.reqs = make(chan *appendReq, 1024)
		s.done = make(chan struct{})
		go s.applyLoop()
		go s.writer()
	}
	return s, nil
}

// recover applies the journal's frames that bbolt does not hold (appends
// acknowledged before a crash) in one synced transaction, then opens the
// journal for the writer, starting again at offset 0.
func (s *Store) recover() error {
	applied := false
	if s.refusal == nil {
		frames, err := pendingFrames(journalPath(s.path), s.head, s.hash)
		if err != nil && !isDamage(err) {
			s.refuseJournal(err)
			frames = nil
		}
		// Before damage, the readable frames are whole and follow the
		// log: they are applied either way (the damaged journal stays as
		// it is until a repair).
		if len(frames) > 0 {
			if err := s.guard(func() error {
				return s.db.Update(func(tx *bolt.Tx) error { return applyFrames(tx, frames) })
			}); err != nil {
				return fmt.Errorf("apply the journal: %w", err)
			}
			s.head, s.hash = frames[len(frames)-1].last()
			applied = true
			s.opts.Logger.Info("store: applied the journal's acknowledged tail", "path", s.path, "frames", len(frames), "head", s.head)
		}
		if dmg := (*JournalDamage)(nil); errors.As(err, &dmg) {
			if s.opts.repair == nil {
				// Keep the damaged journal as it is, for the repair: no
				// writer opens (or preallocates) it; appends are refused.
				s.refuseJournal(err)
				s.w = writerState{head: s.head, hash: s.hash, ids: map[events.ID]uint64{}, reqs: map[events.ID]int{}}
				return nil
			}
			if err := s.keepDamaged(dmg); err != nil {
				return err
			}
			applied = false // the new journal starts empty
		}
	}
	j, err := openJournal(journalPath(s.path))
	if err != nil {
		return err
	}
	s.j = j
	if applied {
		// bbolt holds it all now: the journal starts empty, so the next
		// open (a read-only one too) finds nothing to apply.
		if err := j.reset(); err != nil {
			j.close()
			return fmt.Errorf("reset the journal: %w", err)
		}
	}
	s.w = writerState{head: s.head, hash: s.hash, ids: map[events.ID]uint64{}, reqs: map[events.ID]int{}}
	return s.db.View(func(tx *bolt.Tx) error {
		s.w.src = readSource(tx)
		return nil
	})
}

func (s *Store) init() error {
	if !s.opts.ReadOnly {
		err := s.db.Update(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketEvents, bucketIDs, bucketByRequest, bucketBySession, bucketMeta, bucketPayloads} {
				if _, err := tx.CreateBucketIfNotExists(b); err != nil {
					return err
				}
			}
			if err := dropLogViews(tx); err != nil {
				return err
			}
			meta := tx.Bucket(bucketMeta)
			if meta.Get(keySchema) == nil {
				return meta.Put(keySchema, binary.BigEndian.AppendUint32(nil, SchemaVersion))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return s.db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return nil // a read-only open of a store never written to
		}
		if v := meta.Get(keySchema); len(v) == 4 && binary.BigEndian.Uint32(v) != SchemaVersion {
			return fmt.Errorf("schema version %d; this build reads %d", binary.BigEndian.Uint32(v), SchemaVersion)
		}
		if v := meta.Get(keyHead); len(v) == 8+32 {
			s.head = binary.BigEndian.Uint64(v)
			copy(s.hash[:], v[8:])
		}
		if problem := checkTail(tx, s.head, s.hash); problem != nil {
			s.refusal = &events.Err{Code: events.CodeChainBroken, Msg: problem.Error() +
				"; appends are refused until the store is repaired (run `tracebridge verify` for the first bad seq)"}
		}
		return nil
	})
}

// isDamage says whether err is a *JournalDamage.
func isDamage(err error) bool {
	var dmg *JournalDamage
	return errors.As(err, &dmg)
}

// refuseJournal refuses appends to a log whose journal cannot be applied
// to it (another log's, or a log rolled back under it): the log stays
// readable, so verify can say what happened.
func (s *Store) refuseJournal(err error) {
	if dmg := (*JournalDamage)(nil); errors.As(err, &dmg) {
		s.refusal = &events.Err{Code: events.CodeChainBroken, Msg: err.Error() +
			"; appends are refused. Restore the data dir from a backup, or run `tracebridge verify --repair-journal` with no tracebridge process running: it applies what is readable, keeps the damaged journal beside it and records what was dropped"}
		return
	}
	s.refusal = &events.Err{Code: events.CodeChainBroken, Msg: err.Error() +
		"; appends are refused: restore the log and its journal together, or run `tracebridge verify` to see where the log ends"}
}

// checkTail compares the head recorded in meta with the last stored record:
// a cheap check that catches a truncated or edited tail at open. Verify
// checks everything.
func checkTail(tx *bolt.Tx, head uint64, hash events.Hash) error {
	b := tx.Bucket(bucketEvents)
	if b == nil {
		return nil
	}
	k, v := b.Cursor().Last()
	if k == nil {
		if head != 0 {
			return fmt.Errorf("meta head is seq %d but the log is empty", head)
		}
		return nil
	}
	last := binary.BigEndian.Uint64(k)
	if last != head {
		return fmt.Errorf("last stored seq is %d but meta head is %d", last, head)
	}
	body, prev, h, err := events.SplitRecord(v)
	if err != nil {
		return fmt.Errorf("seq %d: %w", last, err)
	}
	if events.ChainHash(prev, body) != h || h != hash {
		return fmt.Errorf("seq %d: hash does not match its bytes or the meta head", last)
	}
	return nil
}

// guard runs fn, turning a bbolt panic into an error: bbolt panics on a
// page that is not what its parent says, a file damaged under it (a disk
// that lost writes it had acknowledged). That is a finding, not a crash.
func (s *Store) guard(fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = s.damaged(p)
		}
	}()
	return fn()
}

// view and update are bbolt's View and Update with a damaged page an
// error, not a crash (bbolt rolls the transaction back as the panic passes).
// Both first wait for the frames acknowledged before the call (settle).
func (s *Store) view(fn func(*bolt.Tx) error) error {
	s.settle()
	return s.guard(func() error { return s.db.View(fn) })
}

func (s *Store) update(fn func(*bolt.Tx) error) error {
	s.settle()
	return s.guard(func() error { return s.db.Update(fn) })
}

func (s *Store) damaged(what any) error {
	return fmt.Errorf("the store file %s is damaged below the log (bbolt: %v); restore it from a backup or an archive", s.path, what)
}

// Path returns the file the store was opened from.
func (s *Store) Path() string { return s.path }

// Head returns the last seq and its hash.
func (s *Store) Head() (uint64, events.Hash) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.head, s.hash
}

// Refuse makes every later Append fail with err, for a caller that found
// the log unsafe to extend (a failed Verify).
func (s *Store) Refuse(err *events.Err) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refusal == nil {
		s.refusal = err
	}
}

// diskFull is a commit that failed with ENOSPC: nothing of it is on
// record (bbolt's meta page was never written), so the next batch simply
// tries again, and succeeds once space has been freed.
type diskFull struct {
	since time.Time
	err   error
	tries int
}

// AppendStatus says why appends are refused now, or "" when they are taken.
func (s *Store) AppendStatus() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	switch {
	case s.refusal != nil:
		return string(s.refusal.Code) + ": " + s.refusal.Msg
	case s.full != nil:
		return fmt.Sprintf("%s: the disk is full since %s (%d failed commit(s), last: %v); appends resume by themselves once space is freed",
			events.CodeLogUnavailable, s.full.since.UTC().Format(time.RFC3339), s.full.tries, s.full.err)
	}
	return ""
}

// Refusal returns why appends are refused, or nil.
func (s *Store) Refusal() *events.Err {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.refusal
}

// Close waits for queued appends, stops the writer and releases the file.
func (s *Store) Close() error {
	s.sendMu.Lock()
	if s.closed {
		s.sendMu.Unlock()
		return nil
	}
	s.closed = true
	s.sendMu.Unlock()
	var jerr error
	if s.reqs != nil {
		close(s.reqs)
		<-s.done
		s.amu.Lock()
		s.ap.closed = true
		s.amu.Unlock()
		select {
		case s.ap.wake <- struct{}{}:
		default: // a token is there already
		}
		<-s.ap.done
		s.acond.Broadcast()
		if s.j != nil && !s.pending() && s.Refusal() == nil {
			// bbolt holds it all: the next open reads an empty journal
			// instead of checking up to 256 KiB of applied frames.
			jerr = s.j.reset()
		}
		if s.j != nil {
			jerr = errors.Join(jerr, s.j.close())
		}
	}
	var verr error
	if s.views != nil {
		verr = s.views.Close()
	}
	return errors.Join(jerr, s.db.Close(), verr)
}

func seqKey(seq uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), seq) }

func indexKey(id events.ID, seq uint64) []byte {
	k := make([]byte, 0, 24)
	k = append(k, id[:]...)
	return binary.BigEndian.AppendUint64(k, seq)
}
