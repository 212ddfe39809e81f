package store

import (
	"crypto/ed25519"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tracebridge/tracebridge/internal/durable"

	"github.com/tracebridge/tracebridge/events"
)

// Checkpoint is a signed statement that the log held seq with this hash at
// Time. Kept outside the store (exported to a file), it exposes truncation
// and rollback: a log that no longer has seq, or has another hash there, is
// not the one that was signed.
type Checkpoint struct {
	Version   int         `json:"version"`
	Seq       uint64      `json:"seq"`
	Hash      events.Hash `json:"hash"`
	Time      time.Time   `json:"time"`
	PublicKey []byte      `json:"publicKey"` // ed25519, base64 in JSON
	Signature []byte      `json:"signature"`
}

const checkpointDomain = "tracebridge-checkpoint-v1\n"

func (c *Checkpoint) message() []byte {
	m := []byte(checkpointDomain)
	m = binary.BigEndian.AppendUint64(m, c.Seq)
	m = append(m, c.Hash[:]...)
	return binary.BigEndian.AppendUint64(m, uint64(c.Time.UnixNano()))
}

// SignCheckpoint signs the current head.
func (s *Store) SignCheckpoint(key ed25519.PrivateKey, now time.Time) Checkpoint {
	seq, hash := s.Head()
	cp := Checkpoint{Version: 1, Seq: seq, Hash: hash, Time: now.UTC().Round(0), PublicKey: key.Public().(ed25519.PublicKey)}
	cp.Signature = ed25519.Sign(key, cp.message())
	return cp
}

// CheckSignature reports whether c was signed by trusted (or, when trusted
// is nil, by the key c names).
func (c *Checkpoint) CheckSignature(trusted ed25519.PublicKey) error {
	if c.Version != 1 {
		return fmt.Errorf("checkpoint version %d; this build reads 1", c.Version)
	}
	if len(c.PublicKey) != ed25519.PublicKeySize {
		return errors.New("checkpoint has no valid public key")
	}
	if trusted != nil && !trusted.Equal(ed25519.PublicKey(c.PublicKey)) {
		return errors.New("checkpoint was signed by another key than this data dir's")
	}
	if !ed25519.Verify(c.PublicKey, c.message(), c.Signature) {
		return errors.New("checkpoint signature does not verify: the file was edited")
	}
	return nil
}

// WriteCheckpoint writes c to path atomically (0600).
func WriteCheckpoint(path string, c Checkpoint) error {
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return durable.WriteFileAtomic(path, append(b, '\n'), 0o600)
}

// ReadCheckpoint reads a checkpoint file and checks its signature against
// trusted (nil: the key it names).
func ReadCheckpoint(path string, trusted ed25519.PublicKey) (Checkpoint, error) {
	var c Checkpoint
	b, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("read checkpoint: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("read checkpoint %s: %w", path, err)
	}
	if err := c.CheckSignature(trusted); err != nil {
		return c, fmt.Errorf("checkpoint %s: %w", path, err)
	}
	return c, nil
}

// LoadSigningKey reads the ed25519 seed at path, creating one (0600) if the
// file does not exist.
func LoadSigningKey(path string) (ed25519.PrivateKey, error) {
	seed, err := events.LoadKeyFile(path, ed25519.SeedSize)
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return ed25519.NewKeyFromSeed(seed), nil
}
