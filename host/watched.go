package host

import (
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host/lsp"
)

// A language server reads the workspace when it starts; what changes on
// disk after that (a file created by hand, by the AI's approved proposal,
// removed) it learns only if told (seed 142: find_symbol missed a file the
// proposal had just created). Before a request that reads the whole
// workspace, the host tells the server what changed in its language's
// files since it last looked (workspace/didChangeWatchedFiles).

// diskView is what a server was last told of its language's files.
type diskView struct {
	start int // the server's start it is for
	files map[string]fileStamp
}

type fileStamp struct {
	size int64
	mod  time.Time
}

// tellChanges tells srv, when it runs, which files of its language were
// created, changed or removed since it last looked: since the previous
// request, or (the first time for this start) those changed after it
// started.
func (l *Languages) tellChanges(srv *lsp.Server, rid events.ID) {
	start, since := srv.Running()
	lang, known := l.langOf(srv)
	if start == 0 || !known {
		return
	}
	now := l.ws.stamps(lang.Extensions)
	l.mu.Lock()
	prev := l.views[lang.Name]
	l.views[lang.Name] = diskView{start: start, files: now}
	l.mu.Unlock()
	changes := map[string]int{}
	for p, st := range now {
		old, seen := prev.files[p]
		switch {
		case prev.start != start: // the first look since this start
			if st.mod.After(since) {
				changes[p] = lsp.FileChanged // created or changed: the server may have read either
			}
		case !seen:
			changes[p] = lsp.FileCreated
		case old != st:
			changes[p] = lsp.FileChanged
		}
	}
	if prev.start == start {
		for p := range prev.files {
			if _, ok := now[p]; !ok {
				changes[p] = lsp.FileDeleted
			}
		}
	}
	abs := make(map[string]int, len(changes))
	for p, c := range changes {
		abs[filepath.Join(l.ws.Dir(), filepath.FromSlash(p))] = c
	}
	srv.FilesChanged(rid, abs)
}

// langOf is the language srv serves.
func (l *Languages) langOf(srv *lsp.Server) (Language, bool) {
	i := slices.IndexFunc(l.langs, func(lang Language) bool { return lang.Name == srv.Language() })
	if i < 0 {
		return Language{}, false
	}
	return l.langs[i], true
}

// stamps are the size and time of change of the workspace's files with
// one of exts, by slash path; hidden folders and node_modules are left out
// (as language servers leave them), and at most MaxTreeEntries are seen.
func (w *Workspace) stamps(exts []string) map[string]fileStamp {
	out := map[string]fileStamp{}
	fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		name := d.Name()
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(name, ".") || name == "node_modules") {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !slices.Contains(exts, path.Ext(name)) {
			return nil
		}
		if len(out) == MaxTreeEntries {
			return fs.SkipAll
		}
		if fi, err := d.Info(); err == nil {
			out[p] = fileStamp{size: fi.Size(), mod: fi.ModTime()}
		}
		return nil
	})
	return out
}
