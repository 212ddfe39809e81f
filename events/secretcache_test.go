package events

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Two processes of one data dir: what one registers, the other redacts
// without ever having resolved it; the file holds no clear text; a torn
// last record and a record under another key are skipped.
func TestSecretCacheSharesAcrossRedactors(t *testing.T) {
	dir := t.TempDir()
	key, cache := filepath.Join(dir, "keys", "redact.key"), filepath.Join(dir, "keys", "secrets.sealed")
	bridge, err := LoadSharedRedactor(key, cache)
	if err != nil {
		t.Fatal(err)
	}
	host, err := LoadSharedRedactor(key, cache)
	if err != nil {
		t.Fatal(err)
	}
	secret := "s3cr3t-value-for-the-cache"
	if got := host.Value("content", "x "+secret); !strings.Contains(got, secret) {
		t.Fatal("redacted before anyone registered it")
	}
	bridge.Register(secret)
	if got := host.Value("content", "x "+secret); strings.Contains(got, secret) || got != bridge.Value("content", "x "+secret) {
		t.Fatalf("the host did not learn the bridge's secret (or fingerprints differ): %q", got)
	}
	if got := host.Scrub(strings.Repeat("y", 5000) + secret); strings.Contains(got, secret) || len(got) < 5000 {
		t.Fatal("Scrub left the secret or truncated the document")
	}
	b, _ := os.ReadFile(cache)
	if strings.Contains(string(b), secret) || strings.Contains(string(b), "s3cr3t") {
		t.Fatal("the cache holds the secret in the clear")
	}
	if fi, _ := os.Stat(cache); fi.Mode().Perm() != 0o600 {
		t.Errorf("cache mode %v", fi.Mode())
	}
	// Another key's record and a torn one: ignored, nothing lost.
	other, _ := openSecretCache(cache, make([]byte, 32))
	other.Add("someone-elses")
	f, _ := os.OpenFile(cache, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{0, 0, 1})
	f.Close()
	late, err := LoadSharedRedactor(key, cache)
	if err != nil {
		t.Fatal(err)
	}
	if got := late.Value("content", secret+" someone-elses"); strings.Contains(got, secret) || !strings.Contains(got, "someone-elses") {
		t.Fatalf("a late process: %q", got)
	}
}

func TestRedactsDoubleJSONEscapedSecrets(t *testing.T) {
	r := NewRedactor([]byte("k"))
	secret := `pa"ss\word`
	r.Register(secret)
	for _, form := range []string{`pa\"ss\\word`, `pa\\\"ss\\\\word`} {
		if got := r.Value("args", `{"q":"`+form+`"}`); strings.Contains(got, "ss") {
			t.Errorf("%s survived: %s", form, got)
		}
	}
}

// A request's events and values (ValueFor) look at the shared cache once,
// on the first: a secret shared before a request reaches this process is
// redacted in all of them; the next request sees what was shared since.
func TestSharedSecretsAreLookedUpOncePerRequest(t *testing.T) {
	dir := t.TempDir()
	key, cache := filepath.Join(dir, "keys", "redact.key"), filepath.Join(dir, "keys", "secrets.sealed")
	bridge, _ := LoadSharedRedactor(key, cache)
	host, err := LoadSharedRedactor(key, cache)
	if err != nil {
		t.Fatal(err)
	}
	first, second := "first-shared-secret", "second-shared-secret"
	bridge.Register(first)
	req := NewID()
	redacted := func(req ID, v string) string {
		e := Event{RequestID: req, Attrs: A("content", v)}
		host.Redact(&e)
		return e.Attrs.Get("content")
	}
	if got := redacted(req, first); strings.Contains(got, first) {
		t.Fatalf("shared before the request: %q", got)
	}
	looked := host.shared.read
	bridge.Register(second) // shared mid-request: the request's later events do not look again
	if redacted(req, first); host.shared.read != looked {
		t.Fatal("the cache was read again within one request")
	}
	// The executor's values of the request (ValueFor) share its one look.
	if got := host.ValueFor(req, "result", second); !strings.Contains(got, second) || host.shared.read != looked {
		t.Fatalf("a value of the request read the cache again: %q", got)
	}
	if got := host.ValueFor(NewID(), "result", second); strings.Contains(got, second) {
		t.Fatalf("a value of the next request did not look: %q", got)
	}
	if got := redacted(NewID(), second); strings.Contains(got, second) {
		t.Fatalf("the next request did not look: %q", got)
	}
	if got := redacted(ID{}, second); strings.Contains(got, second) {
		t.Fatalf("an event of no request: %q", got)
	}
}
