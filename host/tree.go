package host

import (
	"io/fs"
	"sort"
	"strings"
	"unicode/utf8"
)

// MaxTreeEntries caps the file tree an operator's UI asks for.
const MaxTreeEntries = 5000

// Tree is the workspace's regular files, as slash paths relative to the
// root, sorted. Hidden entries (a leading dot: .git, .cache…) are left out;
// Truncated says the cap was reached.
type Tree struct {
	Root      string   `json:"root"`
	Files     []string `json:"files"`
	Truncated bool     `json:"truncated,omitempty"`
}

// Tree walks the workspace (symbolic links are not followed).
func (w *Workspace) Tree() (Tree, error) {
	t := Tree{Root: w.dir, Files: []string{}}
	err := fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable: leave it out
		}
		if p != "." && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		if len(t.Files) == MaxTreeEntries {
			t.Truncated = true
			return fs.SkipAll
		}
		t.Files = append(t.Files, p)
		return nil
	})
	sort.Strings(t.Files)
	return t, err
}

// FileView is one workspace file as the operator's UI shows it.
type FileView struct {
	Path    string `json:"path"`
	Content string `json:"content"`
	Binary  bool   `json:"binary,omitempty"` // not UTF-8 text: Content is empty
	Bytes   int    `json:"bytes"`
}

// View reads a workspace file for display.
func (w *Workspace) View(p string) (FileView, error) {
	rel, err := Clean(p)
	if err != nil {
		return FileView{}, err
	}
	b, err := w.ReadFile(rel)
	if err != nil {
		return FileView{}, err
	}
	v := FileView{Path: rel, Bytes: len(b)}
	if utf8.Valid(b) {
		v.Content = string(b)
	} else {
		v.Binary = true
	}
	return v, nil
}
