package events

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// LoadKeyFile returns the size random bytes kept at path, creating the file
// (0600, in a 0700 directory) when it does not exist. Two processes racing to
// create it end up with the same key.
func LoadKeyFile(path string, size int) ([]byte, error) {
	key, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		key = make([]byte, size)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("key %s: %w", path, err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("key %s: %w", path, err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, os.ErrExist) {
			return LoadKeyFile(path, size)
		}
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", path, err)
		}
		_, werr := f.Write(key)
		if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
			return nil, fmt.Errorf("key %s: %w", path, err)
		}
		return key, nil
	}
	if err != nil {
		return nil, fmt.Errorf("key %s: %w", path, err)
	}
	if len(key) != size {
		return nil, fmt.Errorf("key %s: %d bytes, want %d (move it away to make a new one)", path, len(key), size)
	}
	return key, nil
}
