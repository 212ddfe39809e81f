//go:build linux

package powercut

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
)

// pageSize is the unit a power cut tears writes at.
const pageSize = 4096

// inode is the model of one file or directory: what the disk holds (synced)
// and what the page cache holds on top of it (live).
type inode struct {
	mode   uint32 // syscall.S_IF* | permission bits
	target string // a symlink's

	// Regular files. durable is the content a power cut keeps: pages
	// absent from it are zeros. dirty holds the live content of every page
	// written since the last completed sync: a cut keeps each of them, or
	// not, on its own.
	durable map[int64][]byte
	dsize   int64
	dirty   map[int64][]byte
	lsize   int64

	// Directories. synced is the set of entries a completed fsync of the
	// directory made durable; pending are the changes since, in order.
	live    map[string]*inode
	synced  map[string]*inode
	pending []dirOp
}

// dirOp is one change to a directory: name now refers to to (nil: removed).
type dirOp struct {
	name string
	to   *inode
}

func (n *inode) isDir() bool  { return n.mode&syscall.S_IFMT == syscall.S_IFDIR }
func (n *inode) isFile() bool { return n.mode&syscall.S_IFMT == syscall.S_IFREG }

func newDir(mode uint32) *inode {
	return &inode{mode: mode, live: map[string]*inode{}, synced: map[string]*inode{}}
}

func newFile(mode uint32) *inode {
	return &inode{mode: mode, durable: map[int64][]byte{}, dirty: map[int64][]byte{}}
}

// link records name → to in dir (to nil: unlink).
func (d *inode) link(name string, to *inode) {
	if to == nil {
		delete(d.live, name)
	} else {
		d.live[name] = to
	}
	d.pending = append(d.pending, dirOp{name, to})
}

// syncDir makes every pending change of d durable.
func (d *inode) syncDir() {
	for _, op := range d.pending {
		op.apply(d.synced)
	}
	d.pending = nil
}

func (op dirOp) apply(m map[string]*inode) {
	if op.to == nil {
		delete(m, op.name)
	} else {
		m[op.name] = op.to
	}
}

// wrote re-reads the pages [off, off+n) from the backing file f after a
// write (or a size change) went through: they are now in the page cache,
// not yet on disk.
func (n *inode) wrote(f *os.File, off, length int64) error {
	st, err := f.Stat()
	if err != nil {
		return err
	}
	n.lsize = st.Size()
	for p := range n.dirty {
		if p*pageSize >= n.lsize {
			delete(n.dirty, p)
		}
	}
	if length == 0 {
		if n.lsize == 0 {
			return nil
		}
		off, length = n.lsize-1, 1 // a size change dirties the last page
	}
	for p := off / pageSize; p*pageSize < off+length && p*pageSize < n.lsize; p++ {
		buf := make([]byte, pageSize)
		k, err := f.ReadAt(buf, p*pageSize)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		n.dirty[p] = buf[:k]
	}
	return nil
}

// syncFile makes the page cache of n durable: content and size.
func (n *inode) syncFile() {
	for p, b := range n.dirty {
		n.durable[p] = b
	}
	n.dsize = n.lsize
	for p := range n.durable {
		if p*pageSize >= n.dsize {
			delete(n.durable, p)
		}
	}
	clear(n.dirty)
}

// loseDirty is a failed sync: the kernel marks the pages clean though the
// disk never got them (the "fsyncgate" behaviour of Linux). A later sync
// succeeds without them.
func (n *inode) loseDirty() { clear(n.dirty) }

// load reads a file that existed before the mount: all of it durable.
func (n *inode) load(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	n.dsize, n.lsize = int64(len(b)), int64(len(b))
	zero := make([]byte, pageSize)
	for off := 0; off < len(b); off += pageSize {
		page := b[off:min(off+pageSize, len(b))]
		if !bytes.Equal(page, zero[:len(page)]) {
			n.durable[int64(off/pageSize)] = bytes.Clone(page)
		}
	}
	return nil
}

// loadTree builds the model of a directory tree that exists before the
// mount: everything in it is durable.
func loadTree(path string) (*inode, error) {
	st, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	sys := st.Sys().(*syscall.Stat_t)
	switch sys.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		d := newDir(sys.Mode)
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			c, err := loadTree(filepath.Join(path, e.Name()))
			if err != nil {
				return nil, err
			}
			d.live[e.Name()], d.synced[e.Name()] = c, c
		}
		return d, nil
	case syscall.S_IFREG:
		f := newFile(sys.Mode)
		return f, f.load(path)
	case syscall.S_IFLNK:
		t, err := os.Readlink(path)
		return &inode{mode: sys.Mode, target: t}, err
	default:
		return &inode{mode: sys.Mode}, nil
	}
}

// Tear says how much of what was not synced a cut keeps.
type Tear struct {
	// Keep is the chance that each unsynced page, each unsynced size
	// change and each pending directory change survives: 0 is the
	// strictest image (only what was synced), 1 is a process crash (the
	// page cache reaches the disk).
	Keep float64
}

// image writes what a power cut at this moment could leave into dst.
func (d *inode) image(dst string, tear Tear, rng *rand.Rand, seen map[*inode]bool) error {
	if seen[d] {
		return nil
	}
	seen[d] = true
	if err := os.Mkdir(dst, os.FileMode(d.mode&0o777)); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	entries := make(map[string]*inode, len(d.synced))
	for k, v := range d.synced {
		entries[k] = v
	}
	// Directory changes reach the disk in order: a prefix of the pending ones.
	kept := 0
	for kept < len(d.pending) && rng.Float64() < tear.Keep {
		kept++
	}
	for _, op := range d.pending[:kept] {
		op.apply(entries)
	}
	for name, c := range entries {
		p := filepath.Join(dst, name)
		var err error
		switch {
		case c.isDir():
			err = c.image(p, tear, rng, seen)
		case c.isFile():
			err = c.writeImage(p, tear, rng)
		case c.mode&syscall.S_IFMT == syscall.S_IFLNK:
			err = os.Symlink(c.target, p)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	return nil
}

// writeImage writes the content of n a cut leaves: the durable pages, each
// dirty page with the chance tear.Keep, the new size likewise.
func (n *inode) writeImage(path string, tear Tear, rng *rand.Rand) error {
	size := n.dsize
	if n.lsize != n.dsize && rng.Float64() < tear.Keep {
		size = n.lsize
	}
	pages := make(map[int64][]byte, len(n.durable)+len(n.dirty))
	for p, b := range n.durable {
		pages[p] = b
	}
	for p, b := range n.dirty {
		if rng.Float64() < tear.Keep {
			pages[p] = b
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, os.FileMode(n.mode&0o777))
	if err != nil {
		return err
	}
	for p, b := range pages {
		if p*pageSize >= size {
			continue
		}
		if _, err := f.WriteAt(b[:min(int64(len(b)), size-p*pageSize)], p*pageSize); err != nil {
			f.Close()
			return err
		}
	}
	return errors.Join(f.Truncate(size), f.Close())
}
