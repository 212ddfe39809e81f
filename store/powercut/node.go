//go:build linux

package powercut

import (
	"context"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a go-fuse loopback node that keeps the model up to date.
type node struct {
	*fs.LoopbackNode
	fsys *FS
	m    *inode // set by the operation that made the node
}

// WrapChild makes every node the loopback creates one of ours.
func (n *node) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*fs.LoopbackNode), fsys: n.fsys}
}

func modelOf(in *fs.Inode) *node { return in.Operations().(*node) }

// backing is the node's path in the backing directory.
func (n *node) backing() string {
	return filepath.Join(n.RootData.Path, n.Path(n.RootData.RootNode.EmbeddedInode()))
}

// rel is the node's path inside the mount.
func (n *node) rel() string { return n.Path(n.RootData.RootNode.EmbeddedInode()) }

// adopt binds the go-fuse inode ch made for name to the model: a new
// model inode when made is set, else the one the directory names.
func (n *node) adopt(ch *fs.Inode, name string, made *inode) {
	c := modelOf(ch)
	switch {
	case made != nil:
		c.m = made
		n.m.link(name, made)
	case c.m != nil:
	case n.m.live[name] != nil:
		c.m = n.m.live[name]
	default: // appeared behind the file system's back: take it as durable
		m, err := loadTree(filepath.Join(n.backing(), name))
		if err != nil {
			m = newFile(syscall.S_IFREG)
		}
		c.m = m
		n.m.live[name], n.m.synced[name] = m, m
	}
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno == 0 {
		n.fsys.mu.Lock()
		n.adopt(ch, name, nil)
		n.fsys.mu.Unlock()
	}
	return ch, errno
}

func (n *node) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	n.fsys.mu.Lock()
	defer n.fsys.mu.Unlock()
	_, existed := n.m.live[name]
	ch, fh, fl, errno := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	if errno != 0 {
		return ch, fh, fl, errno
	}
	if existed {
		n.adopt(ch, name, nil)
	} else {
		n.adopt(ch, name, newFile(out.Attr.Mode))
	}
	h, errno := n.fsys.wrap(modelOf(ch), fh, filepath.Join(n.backing(), name))
	return ch, h, fl, errno
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return fh, fl, errno
	}
	h, errno := n.fsys.wrap(n, fh, n.backing())
	return h, fl, errno
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.fsys.mu.Lock()
	defer n.fsys.mu.Unlock()
	ch, errno := n.LoopbackNode.Mkdir(ctx, name, mode, out)
	if errno == 0 {
		n.adopt(ch, name, newDir(out.Attr.Mode))
	}
	return ch, errno
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.fsys.mu.Lock()
	defer n.fsys.mu.Unlock()
	ch, errno := n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
	if errno == 0 {
		m := &inode{mode: out.Attr.Mode}
		if m.isFile() {
			m = newFile(out.Attr.Mode)
		}
		n.adopt(ch, name, m)
	}
	return ch, errno
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.fsys.mu.Lock()
	defer n.fsys.mu.Unlock()
	ch, errno := n.LoopbackNode.Symlink(ctx, target, name, out)
	if errno == 0 {
		n.adopt(ch, name, &inode{mode: syscall.S_IFLNK | 0o777, target: target})
	}
	return ch, errno
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.fsys.mu.Lock()
	defer n.fsys.mu.Unlock()
	ch, errno := n.LoopbackNode.Link(ctx, target, name, out)
	if errno == 0 {
		n.adopt(ch, name, target.(*node).m)
	}
	return ch, errno
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	n.fsys.mu.Lock()
	defer n.fsys.mu.Unlock()
	errno := n.LoopbackNode.Unlink(ctx, name)
	if errno == 0 {
		n.m.link(name, nil)
	}
	return errno
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	n.fsys.mu.Lock()
	defer n.fsys.mu.Unlock()
	errno := n.LoopbackNode.Rmdir(ctx, name)
	if errno == 0 {
		n.m.link(name, nil)
	}
	return errno
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	n.fsys.mu.Lock()
	defer n.fsys.mu.Unlock()
	errno := n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
	if errno != 0 {
		return errno
	}
	to := newParent.(*node).m
	moved, over := n.m.live[name], to.live[newName]
	n.fsys.stats.Renames++
	if flags&_RENAME_EXCHANGE != 0 {
		n.m.link(name, over)
		to.link(newName, moved)
		return 0
	}
	n.m.link(name, nil)
	to.link(newName, moved)
	return 0
}

const _RENAME_EXCHANGE = 2

func (n *node) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if h, ok := fh.(*handle); ok {
		return h.Setattr(ctx, in, out)
	}
	n.fsys.mu.Lock()
	defer n.fsys.mu.Unlock()
	errno := n.LoopbackNode.Setattr(ctx, fh, in, out)
	if m, ok := in.GetMode(); ok && errno == 0 {
		n.m.mode = n.m.mode&syscall.S_IFMT | m&0o7777
	}
	if _, ok := in.GetSize(); ok && errno == 0 && n.m.isFile() {
		f, err := os.Open(n.backing())
		if err != nil {
			return fs.ToErrno(err)
		}
		defer f.Close()
		return fs.ToErrno(n.m.wrote(f, 0, 0))
	}
	return errno
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	fh, fl, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return fh, fl, errno
	}
	return &dirHandle{FileHandle: fh, n: n}, fl, 0
}

// Fsync of a directory opened without a handle of ours.
func (n *node) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	if h, ok := fh.(*handle); ok {
		return h.Fsync(ctx, flags)
	}
	n.fsys.mu.Lock()
	defer n.fsys.mu.Unlock()
	if n.m.isDir() {
		n.fsys.stats.DirSyncs++
		n.m.syncDir()
	}
	return 0
}

// dirHandle is an open directory; its fsync makes the directory's pending
// changes durable.
type dirHandle struct {
	fs.FileHandle
	n *node
}

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	return d.FileHandle.(fs.FileReaddirenter).Readdirent(ctx)
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return d.FileHandle.(fs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *dirHandle) Releasedir(ctx context.Context, flags uint32) {
	d.FileHandle.(fs.FileReleasedirer).Releasedir(ctx, flags)
}

func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	f := d.n.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	if errno := f.fault(OpFsync, d.n.rel()); errno != 0 {
		return errno
	}
	f.stats.DirSyncs++
	d.n.m.syncDir()
	return 0
}

// handle is an open regular file: the loopback handle, plus a descriptor of
// its own to read back what a write put in the page cache.
type handle struct {
	inner fs.FileHandle
	n     *node
	rd    *os.File
}

func (f *FS) wrap(n *node, fh fs.FileHandle, backing string) (fs.FileHandle, syscall.Errno) {
	if n.m == nil || !n.m.isFile() {
		return fh, 0
	}
	rd, err := os.Open(backing)
	if err != nil {
		fh.(fs.FileReleaser).Release(context.Background())
		return nil, fs.ToErrno(err)
	}
	return &handle{inner: fh, n: n, rd: rd}, 0
}

func (h *handle) Read(ctx context.Context, buf []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	return h.inner.(fs.FileReader).Read(ctx, buf, off)
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	f := h.n.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	if errno := f.fault(OpWrite, h.n.rel()); errno != 0 {
		return 0, errno
	}
	k, errno := h.inner.(fs.FileWriter).Write(ctx, data, off)
	if errno != 0 {
		return k, errno
	}
	f.stats.Writes++
	f.stats.BytesWritten += int64(k)
	return k, fs.ToErrno(h.n.m.wrote(h.rd, off, int64(k)))
}

func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	f := h.n.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	if errno := f.fault(OpFsync, h.n.rel()); errno != 0 {
		h.n.m.loseDirty()
		return errno
	}
	f.stats.FileSyncs++
	h.n.m.syncFile()
	return 0
}

func (h *handle) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	f := h.n.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	if errno := h.inner.(fs.FileSetattrer).Setattr(ctx, in, out); errno != 0 {
		return errno
	}
	if m, ok := in.GetMode(); ok {
		h.n.m.mode = h.n.m.mode&syscall.S_IFMT | m&0o7777
	}
	if _, ok := in.GetSize(); ok {
		return fs.ToErrno(h.n.m.wrote(h.rd, 0, 0))
	}
	return 0
}

func (h *handle) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	f := h.n.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	if errno := f.fault(OpWrite, h.n.rel()); errno != 0 {
		return errno
	}
	if errno := h.inner.(fs.FileAllocater).Allocate(ctx, off, size, mode); errno != 0 {
		return errno
	}
	return fs.ToErrno(h.n.m.wrote(h.rd, 0, 0))
}

func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	return h.inner.(fs.FileGetattrer).Getattr(ctx, out)
}

func (h *handle) Lseek(ctx context.Context, off uint64, whence uint32) (uint64, syscall.Errno) {
	return h.inner.(fs.FileLseeker).Lseek(ctx, off, whence)
}

func (h *handle) Flush(ctx context.Context) syscall.Errno {
	return h.inner.(fs.FileFlusher).Flush(ctx)
}

func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.rd.Close()
	return h.inner.(fs.FileReleaser).Release(ctx)
}
