package hub

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/tracebridge/tracebridge/internal/durable"
)

// DataDir names the files of one data dir.
type DataDir string

func (d DataDir) Store() string        { return filepath.Join(string(d), "events.db") }
func (d DataDir) HubFile() string      { return filepath.Join(string(d), "hub.json") }
func (d DataDir) Checkpoint() string   { return filepath.Join(string(d), "checkpoint.json") }
func (d DataDir) RedactionKey() string { return filepath.Join(string(d), "keys", "redact.key") }

// SecretCache is where the data dir's processes share the secrets they
// resolved, sealed (events.SecretCache).
func (d DataDir) SecretCache() string { return filepath.Join(string(d), "keys", "secrets.sealed") }
func (d DataDir) SigningKey() string  { return filepath.Join(string(d), "keys", "checkpoint.key") }

// Grants holds the sealed OAuth grants of url servers (one file a server).
func (d DataDir) Grants() string { return filepath.Join(string(d), "keys", "oauth") }
func (d DataDir) LogDir() string { return filepath.Join(string(d), "logs") }

// Descriptors holds upstream tool descriptors whole, by hash.
func (d DataDir) Descriptors() string { return filepath.Join(string(d), "descriptors") }

// Servers holds each confined command server's own folders: NAME/state,
// which it keeps, and NAME/tmp, its TMPDIR.
func (d DataDir) Servers() string { return filepath.Join(string(d), "servers") }

// Archive is where archived segments go unless --out or [retention] names
// another folder.
func (d DataDir) Archive() string { return filepath.Join(string(d), "archive") }

// OTLPState is the OTLP exporter's position (the seq of the last run sent).
func (d DataDir) OTLPState() string { return filepath.Join(string(d), "export", "otlp.json") }

// HTTPKey is the key `mcp --http` derives its bearer token from.
func (d DataDir) HTTPKey() string { return filepath.Join(string(d), "keys", "mcp-http.key") }

// UIInfo is where the running operator UI writes its address.
func (d DataDir) UIInfo() string { return filepath.Join(string(d), "run", "ui.json") }

// PipePath is the first workspace host's socket (a named pipe on Windows,
// named by the data dir's hash), where a bridge looks when no other is
// named.
func (d DataDir) PipePath() string {
	if runtime.GOOS == "windows" {
		sum := sha256.Sum256([]byte(d))
		return `\\.\pipe\tracebridge-` + hex.EncodeToString(sum[:8])
	}
	return filepath.Join(string(d), "run", "host.sock")
}

// Hosts is the registry of running workspace hosts: one file per root.
func (d DataDir) Hosts() string { return filepath.Join(string(d), "run", "hosts") }

// HostSocket is the socket of root's host when another host has PipePath.
func (d DataDir) HostSocket(root string) string {
	return filepath.Join(string(d), "run", "host-"+RootHash(root)+".sock")
}

// HostState is where root's host keeps its proposals and reviews.
func (d DataDir) HostState(root string) string {
	return filepath.Join(string(d), "host", RootHash(root))
}

// RootHash names a workspace root in file names: 12 hex digits of its
// SHA-256.
func RootHash(root string) string {
	sum := sha256.Sum256([]byte(root))
	return hex.EncodeToString(sum[:6])
}

// Ensure creates the data dir with mode 0700, and refuses one that others
// can read or write.
func (d DataDir) Ensure() error {
	if err := durable.MkdirAll(string(d), 0o700); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	fi, err := os.Stat(string(d))
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("data dir %s is not a directory", d)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("data dir %s has mode %v; it holds tokens and keys, so it must not be readable by others (chmod 700 %s)", d, fi.Mode().Perm(), d)
	}
	return nil
}

// Info is what hub.json holds: how to reach the hub.
type Info struct {
	URL     string    `json:"url"`
	Token   string    `json:"token"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	// Stream is the cluster stream the hub publishes to; empty for a
	// hub whose store is the log.
	Stream string `json:"stream,omitempty"`
}

func (d DataDir) writeInfo(info Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	return durable.WriteFileAtomic(d.HubFile(), append(b, '\n'), 0o600)
}

func (d DataDir) readInfo() (Info, error) {
	var info Info
	b, err := os.ReadFile(d.HubFile())
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(b, &info); err != nil {
		return info, fmt.Errorf("%s: %w", d.HubFile(), err)
	}
	if info.URL == "" || info.Token == "" {
		return info, fmt.Errorf("%s: no url or token", d.HubFile())
	}
	return info, nil
}

// removeInfo deletes hub.json if it still describes this hub.
func (d DataDir) removeInfo(token string) {
	if info, err := d.readInfo(); err == nil && info.Token == token {
		if err := os.Remove(d.HubFile()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return
		}
	}
}

// PublicKey returns the public half of the data dir's checkpoint signing
// key, or nil if the data dir has none yet. It never creates a key.
func (d DataDir) PublicKey() (ed25519.PublicKey, error) {
	seed, err := os.ReadFile(d.SigningKey())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("%s: %d bytes, want %d", d.SigningKey(), len(seed), ed25519.SeedSize)
	}
	return ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey), nil
}
