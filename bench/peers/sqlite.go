package main

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"

	_ "modernc.org/sqlite" // pure Go SQLite

	"github.com/tracebridge/tracebridge/events"
)

// sqliteStore is SQLite in WAL mode with synchronous=FULL (each commit
// fsyncs the WAL) and group commit: one writer goroutine commits every
// queued request in one transaction, as tracebridge's writer does. Event ids
// are UNIQUE (tracebridge deduplicates by id too); an index on (req, seq)
// serves the lookup.
type sqliteStore struct {
	db   *sql.DB
	reqs chan *sqliteReq
	done chan struct{}
}

type sqliteReq struct {
	evs []events.Event
	err chan error
}

func openSQLite(dir string, _ bool) (peer, error) {
	dsn := "file:" + filepath.Join(dir, "events.sqlite") + "?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=busy_timeout(10000)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS events (seq INTEGER PRIMARY KEY, id BLOB NOT NULL UNIQUE, req BLOB NOT NULL, body BLOB NOT NULL);
		CREATE INDEX IF NOT EXISTS events_req ON events (req, seq);`); err != nil {
		db.Close()
		return nil, err
	}
	s := &sqliteStore{db: db, reqs: make(chan *sqliteReq, 1024), done: make(chan struct{})}
	go s.writer()
	return s, nil
}

func (s *sqliteStore) writer() {
	defer close(s.done)
	for r := range s.reqs {
		batch := []*sqliteReq{r}
	drain:
		for len(batch) < 512 {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		err := s.commit(batch)
		for _, r := range batch {
			r.err <- err
		}
	}
}

func (s *sqliteStore) commit(batch []*sqliteReq) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	ins, err := tx.Prepare(`INSERT OR IGNORE INTO events (id, req, body) VALUES (?, ?, ?)`)
	if err != nil {
		tx.Rollback()
		return err
	}
	for _, r := range batch {
		for i := range r.evs {
			e := &r.evs[i]
			if _, err := ins.Exec(e.ID[:], e.RequestID[:], events.Encode(e)); err != nil {
				tx.Rollback()
				return err
			}
		}
	}
	ins.Close()
	return tx.Commit()
}

func (s *sqliteStore) Append(ctx context.Context, evs []events.Event) error {
	r := &sqliteReq{evs: evs, err: make(chan error, 1)}
	s.reqs <- r
	select {
	case err := <-r.err:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *sqliteStore) Load(evs []events.Event) error {
	return s.commit([]*sqliteReq{{evs: evs}})
}

func (s *sqliteStore) Request(req events.ID) (int, error) {
	rows, err := s.db.Query(`SELECT body FROM events WHERE req = ? ORDER BY seq`, req[:])
	if err != nil {
		return 0, err
	}
	return decodeRows(rows)
}

func (s *sqliteStore) Scan() (int, error) {
	rows, err := s.db.Query(`SELECT body FROM events ORDER BY seq`)
	if err != nil {
		return 0, err
	}
	return decodeRows(rows)
}

func decodeRows(rows *sql.Rows) (int, error) {
	defer rows.Close()
	n := 0
	var body []byte
	var e events.Event
	for rows.Next() {
		if err := rows.Scan(&body); err != nil {
			return n, err
		}
		if err := events.DecodeInto(&e, body); err != nil {
			return n, fmt.Errorf("row %d: %w", n, err)
		}
		n++
	}
	return n, rows.Err()
}

func (s *sqliteStore) Close() error {
	close(s.reqs)
	<-s.done
	return s.db.Close()
}
