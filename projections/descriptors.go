package projections

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"

	"github.com/tracebridge/tracebridge/internal/durable"
)

// A descriptor longer than an event attribute keeps (4 KiB) is recorded
// cut; an operator must still see it whole before accepting it, and a
// changed tool must still be listed as pinned. So each descriptor is also
// kept whole in the data dir's descriptors/ folder, in a file named by its
// SHA-256 — the hash its pin event records, so the chain covers the file
// through that name and a file whose bytes do not hash to it is ignored.
// A descriptor that holds a registered secret is not kept (the file would
// hold the secret); it cannot be shown whole, and cannot be accepted.

var hashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// SaveDescriptor keeps desc (whose SHA-256 is hash) in dir; an existing
// file is left as it is.
func SaveDescriptor(dir, desc, hash string) error {
	if dir == "" || !hashRE.MatchString(hash) {
		return nil
	}
	path := filepath.Join(dir, hash+".json")
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := durable.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return durable.WriteFileAtomic(path, []byte(desc), 0o600)
}

// loadDescriptor returns the descriptor kept in dir under hash, when there
// is one whose bytes hash to it.
func loadDescriptor(dir, hash string) (string, bool) {
	if dir == "" || !hashRE.MatchString(hash) {
		return "", false
	}
	b, err := os.ReadFile(filepath.Join(dir, hash+".json"))
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != hash {
		return "", false
	}
	return string(b), true
}

// WholeDescriptor is the descriptor with hash, whole: from dir, else the
// recorded one when it was not cut.
func WholeDescriptor(dir, hash, recorded string) (string, bool) {
	if d, ok := loadDescriptor(dir, hash); ok {
		return d, true
	}
	sum := sha256.Sum256([]byte(recorded))
	return recorded, hex.EncodeToString(sum[:]) == hash
}
