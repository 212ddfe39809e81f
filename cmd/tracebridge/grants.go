package main

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tracebridge/tracebridge/internal/durable"

	"github.com/tracebridge/tracebridge/bridge/upstream"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
)

// grantStore keeps each url server's OAuth grant in keys/oauth/NAME.grant
// (0600 in the 0700 keys directory), AES-256-GCM under a key derived from
// the data dir's redaction key, with the server's name as associated
// data: a token is never at rest in the clear, and one server's file
// cannot be passed off as another's.
type grantStore struct {
	dir  string
	aead cipher.AEAD
}

func openGrantStore(dir hub.DataDir) (*grantStore, error) {
	key, err := events.LoadKeyFile(dir.RedactionKey(), 32)
	if err != nil {
		return nil, fmt.Errorf("oauth grants: %w", err)
	}
	aead, err := events.SealingAEAD(key, "tracebridge oauth grants v1")
	if err != nil {
		return nil, err
	}
	return &grantStore{dir: dir.Grants(), aead: aead}, nil
}

func (s *grantStore) path(server string) string { return filepath.Join(s.dir, server+".grant") }

func (s *grantStore) LoadGrant(server string) (*upstream.Grant, error) {
	b, err := os.ReadFile(s.path(server))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n := s.aead.NonceSize()
	if len(b) < n {
		return nil, fmt.Errorf("%s is not a sealed grant: run `tracebridge servers login %s` again", s.path(server), server)
	}
	plain, err := s.aead.Open(nil, b[:n], b[n:], []byte(server))
	if err != nil {
		return nil, fmt.Errorf("%s does not open with this data dir's key: run `tracebridge servers login %s` again", s.path(server), server)
	}
	var g upstream.Grant
	if err := json.Unmarshal(plain, &g); err != nil {
		return nil, fmt.Errorf("%s: %w", s.path(server), err)
	}
	return &g, nil
}

func (s *grantStore) SaveGrant(server string, g *upstream.Grant) error {
	plain, err := json.Marshal(g)
	if err != nil {
		return err
	}
	if err := durable.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce)
	return durable.WriteFileAtomic(s.path(server), s.aead.Seal(nonce, nonce, plain, []byte(server)), 0o600)
}
