package hub

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// A secret the broker registered, and secret-looking attributes, never
// reach the store file or the logs, in any encoding, whichever process
// emits them.
func TestSecretCanaryNeverReachesDiskOrLogs(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	canary := fmt.Sprintf("canary-%016x", rng.Uint64())
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	dir := newDir(t)
	hubNode, err := Open(context.Background(), Options{Dir: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	attached, err := Open(context.Background(), Options{Dir: dir, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	red, err := events.LoadRedactor(dir.RedactionKey())
	if err != nil {
		t.Fatal(err)
	}
	em := events.NewEmitter(attached, events.EmitterOptions{Redactor: red, Logger: logger})
	if err := red.Register(canary); err != nil {
		t.Fatal(err)
	}
	jsonForm, _ := json.Marshal(map[string]string{"v": canary})
	forms := map[string]string{
		"raw":      canary,
		"sentence": "the tool echoed " + canary + " back",
		"base64":   base64.StdEncoding.EncodeToString([]byte(canary)),
		"b64url":   base64.URLEncoding.EncodeToString([]byte("prefix:" + canary)),
		"hex":      hex.EncodeToString([]byte(canary)),
		"url":      "https://x.test/?q=" + url.QueryEscape(canary+" &"),
		"json":     string(jsonForm),
	}
	req := em.NewID()
	for name, v := range forms {
		em.Emit(events.Event{Kind: events.KindToolCompleted, RequestID: req, Attrs: events.A(name, v)})
	}
	em.Emit(events.Event{Kind: events.KindSecretsResolved, RequestID: req, Attrs: events.A("api_key", "plain-looking-value", "Authorization", "Bearer abcdefghijklmnopqrstuvwxyz", "note", "AKIAIOSFODNN7EXAMPLE")})
	// An event that fails validation is logged; its values must not be.
	em.Emit(events.Event{Kind: "bogus.kind", RequestID: req, Attrs: events.A("x", canary)})
	if err := em.Flush(context.Background(), req); err == nil {
		t.Fatal("the invalid event did not fail the flush")
	}
	em.Close(context.Background())
	attached.Close()
	hubNode.Close()

	file, err := os.ReadFile(dir.Store())
	if err != nil {
		t.Fatal(err)
	}
	needles := map[string][]byte{
		"canary":        []byte(canary),
		"canary base64": []byte(base64.RawStdEncoding.EncodeToString([]byte(canary))[:16]),
		"canary hex":    []byte(hex.EncodeToString([]byte(canary))),
		"api key value": []byte("plain-looking-value"),
		"bearer":        []byte("abcdefghijklmnopqrstuvwxyz"),
		"aws key":       []byte("AKIAIOSFODNN7EXAMPLE"),
	}
	for where, hay := range map[string][]byte{"store file": file, "logs": logs.Bytes()} {
		for name, n := range needles {
			if bytes.Contains(hay, n) {
				t.Errorf("%s found in the %s", name, where)
			}
		}
	}
	if !bytes.Contains(file, []byte("[REDACTED:secret:")) || !bytes.Contains(file, []byte("[REDACTED:key:")) {
		t.Fatal("no redaction markers in the store: the events were not stored at all")
	}
	if _, err := os.Stat(filepath.Join(string(dir), "keys", "redact.key")); err != nil {
		t.Fatal("redaction key not kept in the data dir's keys/")
	}
}
