package lsp

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Running returns which start of the server runs now (0: none) and when it
// began: a caller that keeps its own view of the disk for the server takes
// a new one when this changes (a server reads the disk when it starts).
func (s *Server) Running() (start int, since time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.c == nil {
		return 0, time.Time{}
	}
	select {
	case <-s.c.done:
		return 0, time.Time{}
	default:
		return s.starts, s.startedAt
	}
}

// File change types of workspace/didChangeWatchedFiles.
const (
	FileCreated = 1
	FileChanged = 2
	FileDeleted = 3
)

// FilesChanged tells the running server that files changed on disk beside
// it (workspace/didChangeWatchedFiles), by path and change type; a server
// that is not running learns nothing (it reads the disk when it starts). A
// changed file the server has open is told again on its next Open.
func (s *Server) FilesChanged(req events.ID, changes map[string]int) error {
	if len(changes) == 0 {
		return nil
	}
	s.mu.Lock()
	c := s.c
	list := make([]map[string]any, 0, len(changes))
	for _, p := range slices.Sorted(maps.Keys(changes)) {
		u := URI(p)
		list = append(list, map[string]any{"uri": u, "type": changes[p]})
		if changes[p] == FileDeleted {
			delete(s.opened, u)
		}
	}
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	s.emit(events.KindLSPNotified, req, events.ID{}, "", time.Time{}, "method", "workspace/didChangeWatchedFiles", "files", fmt.Sprint(len(list)))
	return c.notify("workspace/didChangeWatchedFiles", map[string]any{"changes": list})
}
