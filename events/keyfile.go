package events

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tracebridge/tracebridge/internal/durable"
)

// LoadKeyFile returns the size random bytes kept at path, creating the file
// (0600, in a 0700 directory) when it does not exist. The key is written to
// a synced temp file and linked into place, so path never holds a part of
// a key (a full disk leaves no file behind), and two processes racing to
// create it end up with the same key. An empty file, which older versions
// left when the disk filled up while creating it, was never used and is
// replaced.
func LoadKeyFile(path string, size int) ([]byte, error) {
	key, err := os.ReadFile(path)
	if err == nil && len(key) == 0 {
		if err := removeEmpty(path); err != nil {
			return nil, fmt.Errorf("key %s is empty (left by a failed creation) and cannot be replaced: %w; remove it and start again", path, err)
		}
		err = os.ErrNotExist
	}
	if errors.Is(err, os.ErrNotExist) {
		key = make([]byte, size)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("key %s: %w", path, err)
		}
		switch err := createKey(path, key); {
		case errors.Is(err, os.ErrExist):
			return LoadKeyFile(path, size) // another process made it first
		case err != nil:
			return nil, fmt.Errorf("key %s: %w", path, err)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	if len(key) != size {
		return nil, fmt.Errorf("key %s: %d bytes, want %d: it is damaged; everything it redacted or signed needs it, so restore it from a backup (or move it away to start a new one)", path, len(key), size)
	}
	return key, nil
}

// createKey writes key to a temp file beside path, syncs it, and links it
// to path, which fails with os.ErrExist when path exists.
func createKey(path string, key []byte) error {
	dir := filepath.Dir(path)
	if err := durable.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(key)
	if err := errors.Join(werr, tmp.Chmod(0o600), tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		return err
	}
	return durable.SyncDir(dir)
}

// removeEmpty removes path if it is still an empty regular file.
func removeEmpty(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	if !fi.Mode().IsRegular() || fi.Size() != 0 {
		return nil // someone replaced it meanwhile: read it again
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
