package events

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/tracebridge/tracebridge/internal/durable"
)

// SecretCache lets the processes of one data dir redact each other's
// secrets: a value one process resolved (the bridge, from its environment)
// is appended, sealed, to a shared file, and every process's redactor
// registers what the file holds before it redacts. The file holds only
// AES-256-GCM ciphertext under a key derived from the redaction key, so the
// secret is never at rest in the clear; it is 0600 in the 0700 keys
// directory, like the key itself.
//
// The file is append-only: one record (4-byte length, nonce, ciphertext)
// per value, written with one O_APPEND write, so concurrent writers never
// lose each other's records. A torn last record is ignored.
type SecretCache struct {
	path string
	aead cipher.AEAD

	mu   sync.Mutex
	read int64 // bytes already read
}

// maxSecretRecord caps one record: a secret is a token, not a document.
const maxSecretRecord = 64 << 10

// openSecretCache returns the cache at path for redaction key key.
func openSecretCache(path string, key []byte) (*SecretCache, error) {
	aead, err := SealingAEAD(key, "tracebridge secret cache v1")
	if err != nil {
		return nil, err
	}
	return &SecretCache{path: path, aead: aead}, nil
}

// SealingAEAD is AES-256-GCM under the key HMAC-SHA256(key, label): one
// data-dir key seals several kinds of file, each under its own label.
func SealingAEAD(key []byte, label string) (cipher.AEAD, error) {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Add appends v, sealed.
func (c *SecretCache) Add(v string) error {
	if len(v) > maxSecretRecord-64 {
		return fmt.Errorf("secret cache: a %d-byte secret is too long to share", len(v))
	}
	nonce := make([]byte, c.aead.NonceSize())
	rand.Read(nonce)
	sealed := c.aead.Seal(nonce, nonce, []byte(v), nil)
	rec := binary.BigEndian.AppendUint32(nil, uint32(len(sealed)))
	rec = append(rec, sealed...)
	if err := durable.MkdirAll(filepath.Dir(c.path), 0o700); err != nil {
		return err
	}
	_, statErr := os.Stat(c.path)
	f, err := os.OpenFile(c.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	_, werr := f.Write(rec)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		return err
	}
	if errors.Is(statErr, os.ErrNotExist) {
		return durable.SyncDir(filepath.Dir(c.path)) // created here: its name too
	}
	return nil
}

// New returns the values appended since the last call (all of them on the
// first), cheaply when the file has not grown.
func (c *SecretCache) New() ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fi, err := os.Stat(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if fi.Size() <= c.read {
		return nil, nil
	}
	f, err := os.Open(c.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, fi.Size()-c.read)
	n, err := f.ReadAt(buf, c.read)
	if err != nil && n < len(buf) {
		buf = buf[:n]
	}
	var out []string
	off := 0
	for off+4 <= len(buf) {
		size := int(binary.BigEndian.Uint32(buf[off:]))
		if size > maxSecretRecord || off+4+size > len(buf) {
			break // a record still being written, or damage: stop here
		}
		sealed := buf[off+4 : off+4+size]
		off += 4 + size
		ns := c.aead.NonceSize()
		if len(sealed) < ns {
			continue
		}
		plain, err := c.aead.Open(nil, sealed[:ns], sealed[ns:], nil)
		if err != nil {
			continue // sealed under another key: not ours to know
		}
		out = append(out, string(plain))
	}
	c.read += int64(off)
	return out, nil
}
