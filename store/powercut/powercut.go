//go:build linux

// Package powercut is a file system for tests that forgets what was not
// synced. Mounted over a backing directory with FUSE, it passes every
// operation through while it models, per file, which writes a completed
// fsync or fdatasync covers and, per directory, which creates, renames and
// removals a completed fsync of the directory covers. Cut writes the image
// a power loss at that moment could leave: everything synced, and of the
// rest nothing, all, or a random part torn at 4 KiB pages (directory
// changes in the order they were made). Inject makes an fsync fail with EIO
// or a write with ENOSPC, the way a failing disk does: a failed fsync's
// pages are marked clean without reaching the disk.
//
// It needs /dev/fuse and the right to mount (root). Nothing in the product
// imports it.
package powercut

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// FS is a mounted power-cut file system.
type FS struct {
	mnt    string
	server *fuse.Server

	mu     sync.Mutex // guards the model, the faults and the counts
	root   *inode
	faults []*Fault
	stats  Stats
}

// Stats counts what the file system saw since the mount.
type Stats struct {
	Writes, FileSyncs, DirSyncs, Renames, Cuts int
	BytesWritten                               int64
	Failed                                     int // calls failed by an injected fault
}

// Op is the operation a fault fails.
type Op string

const (
	OpFsync Op = "fsync" // fsync and fdatasync of a file
	OpWrite Op = "write"
)

// Fault makes Op fail with Errno on files whose path in the mount contains
// Path ("" matches every file; a temp file ".name.123" matches "name"),
// Count times (0: until cleared).
type Fault struct {
	Op    Op
	Path  string
	Errno syscall.Errno
	Count int
	hits  int
}

// Mount mounts the file system at mnt over backing. Everything already in
// backing counts as durable.
func Mount(backing, mnt string) (*FS, error) {
	root, err := loadTree(backing)
	if err != nil {
		return nil, fmt.Errorf("powercut: read %s: %w", backing, err)
	}
	if !root.isDir() {
		return nil, fmt.Errorf("powercut: %s is not a directory", backing)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(backing, &st); err != nil {
		return nil, err
	}
	f := &FS{mnt: mnt, root: root}
	lr := &fs.LoopbackRoot{Path: backing, Dev: uint64(st.Dev)}
	rn := &node{LoopbackNode: &fs.LoopbackNode{RootData: lr}, fsys: f, m: root}
	lr.RootNode = rn
	sec := time.Second
	f.server, err = fs.Mount(mnt, rn, &fs.Options{
		EntryTimeout: &sec, AttrTimeout: &sec,
		MountOptions: fuse.MountOptions{
			FsName: "powercut", Name: "powercut",
			DirectMount: true, DirectMountStrict: true, // tests run as root; no fusermount needed
			MaxBackground: 64, Debug: os.Getenv("POWERCUT_DEBUG") != "",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("powercut: mount %s (needs /dev/fuse and root): %w", mnt, err)
	}
	return f, nil
}

// Unmount unmounts; every process using the mount must be gone.
func (f *FS) Unmount() error {
	var err error
	for i := 0; i < 50; i++ {
		if err = f.server.Unmount(); err == nil {
			f.server.Wait()
			return nil
		}
		time.Sleep(20 * time.Millisecond) // a dying process may still hold a file
	}
	if derr := syscall.Unmount(f.mnt, syscall.MNT_DETACH); derr != nil {
		return errors.Join(err, derr)
	}
	return nil
}

// Cut writes to dst (which must not exist) the image a power loss at this
// instant could leave, choosing what survives of the unsynced state with
// rng. The mounted file system goes on as if nothing happened.
func (f *FS) Cut(dst string, tear Tear, rng *rand.Rand) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats.Cuts++
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("powercut: cut image %s exists", dst)
	}
	return f.root.image(dst, tear, rng, map[*inode]bool{})
}

// Inject adds a fault.
func (f *FS) Inject(fault Fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, &fault)
}

// ClearFaults removes every fault.
func (f *FS) ClearFaults() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = nil
}

// Stats returns the counts so far.
func (f *FS) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats
}

// fault returns the errno an injected fault gives op on path; f.mu held.
func (f *FS) fault(op Op, path string) syscall.Errno {
	for i, ft := range f.faults {
		if ft.Op != op || !strings.Contains(path, ft.Path) {
			continue
		}
		ft.hits++
		if ft.Count > 0 && ft.hits >= ft.Count {
			f.faults = append(f.faults[:i:i], f.faults[i+1:]...)
		}
		f.stats.Failed++
		return ft.Errno
	}
	return 0
}
