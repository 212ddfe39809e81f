package events

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var marker = regexp.MustCompile(`\[REDACTED:[a-z-]+:[0-9a-f]{8}\]`)

func TestRegisteredSecretIsRedactedInEveryEncoding(t *testing.T) {
	r := NewRedactor([]byte("0123456789abcdef0123456789abcdef"))
	secret := "canary-7f3a9c\"q/+=&"
	if err := r.Register(secret); err != nil {
		t.Fatal(err)
	}
	forms := map[string]string{
		"raw":         "token is " + secret + " ok",
		"hex":         "x" + hex.EncodeToString([]byte(secret)) + "y",
		"HEX":         strings.ToUpper(hex.EncodeToString([]byte(secret))),
		"query":       "a=" + url.QueryEscape(secret),
		"path":        "/p/" + url.PathEscape(secret),
		"json":        `{"v":"canary-7f3a9c\"q/+=&"}`,
		"base64":      base64.StdEncoding.EncodeToString([]byte(secret)),
		"base64url":   base64.URLEncoding.EncodeToString([]byte(secret)),
		"base64 at 1": base64.StdEncoding.EncodeToString([]byte("x" + secret + "yz")),
		"base64 at 2": base64.StdEncoding.EncodeToString([]byte("xy" + secret + "z")),
		"base64 raw":  base64.RawStdEncoding.EncodeToString([]byte("abc" + secret)),
	}
	for name, v := range forms {
		got := r.Value("note", v)
		if strings.Contains(got, secret) || strings.Contains(got, "canary") || strings.Contains(got, "Y2FuYXJ5") {
			t.Errorf("%s: secret survived: %q", name, got)
		}
		if !marker.MatchString(got) && !strings.Contains(got, "[REDACTED:secret:") {
			t.Errorf("%s: no marker in %q", name, got)
		}
	}
	if err := r.Register("abc"); err == nil {
		t.Error("a 3-byte secret was accepted")
	}
}

func TestSecretShapesAndKeysAreRedacted(t *testing.T) {
	r := NewRedactor([]byte("k"))
	cases := map[string][2]string{
		"aws":     {"note", "key AKIAIOSFODNN7EXAMPLE here"},
		"github":  {"note", "ghp_" + strings.Repeat("a", 36)},
		"jwt":     {"note", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"},
		"bearer":  {"header", "Authorization: Bearer abcdefghijklmnop"},
		"pem":     {"note", "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n-----END RSA PRIVATE KEY-----"},
		"url":     {"note", "https://bob:hunter22@example.com/x"},
		"api key": {"note", "sk-" + strings.Repeat("x", 30)},
		"by key":  {"password", "plain words"},
		"by key2": {"X-Api-Key", "plain words"},
	}
	for name, c := range cases {
		got := r.Value(c[0], c[1])
		if !marker.MatchString(got) {
			t.Errorf("%s: not redacted: %q", name, got)
		}
	}
	for _, ordinary := range []string{"an ordinary sentence about tokens",
		// A URL with a port, then an email in a later JSON string: no
		// password between (the envelope's user lost its name and email).
		`{"iss":"http://127.0.0.1:39555","name":"alice","email":"alice@example.com"}`} {
		if got := r.Value("note", ordinary); got != ordinary {
			t.Errorf("ordinary text changed: %q", got)
		}
	}
	if got := r.Value("note", `{"url":"https://bob:hunter22@example.com/x"}`); !marker.MatchString(got) {
		t.Errorf("credentials in a JSON string not redacted: %q", got)
	}
}

func TestEqualSecretsCorrelateAcrossKeys(t *testing.T) {
	r := NewRedactor([]byte("k1"))
	a, b := r.Value("password", "same"), r.Value("token", "same")
	if a != b {
		t.Fatalf("%q != %q", a, b)
	}
	if other := NewRedactor([]byte("k2")).Value("password", "same"); other == a {
		t.Fatal("fingerprints do not depend on the key")
	}
}

func TestLongValuesAreTruncatedWithSizeAndHash(t *testing.T) {
	v := strings.Repeat("é", MaxAttrLen) // 2 bytes each: cut must respect runes
	got := truncate(v)
	if len(got) > TruncatedPrefix+200 || !strings.Contains(got, "size=8192") || !strings.Contains(got, "sha256=") {
		t.Fatalf("truncated to %d bytes: %q", len(got), got[len(got)-120:])
	}
	if !strings.HasPrefix(got, strings.Repeat("é", TruncatedPrefix/2)) {
		t.Fatal("prefix not kept whole")
	}
}

func TestRedactDoesNotChangeTheCallersMap(t *testing.T) {
	r := NewRedactor([]byte("k"))
	attrs := map[string]string{"password": "hunter22"}
	e := Event{Attrs: AttrsOf(attrs)}
	r.Redact(&e)
	if attrs["password"] != "hunter22" || e.Attrs.Get("password") == "hunter22" {
		t.Fatalf("caller map %v, event %v", attrs, e.Attrs)
	}
}

// hintMask names exactly the formats hinted names, whatever the value, in
// one pass or not.
func FuzzHintMask(f *testing.F) {
	for _, s := range []string{"", "AKIA0123", "a Bearer x", "https://u:p@h", "ghp_x sk-y eyJ", strings.Repeat("secret ", 60)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		var want uint32
		for i, fm := range secretFormats {
			if hinted(v, fm.hints) {
				want |= 1 << i
			}
		}
		if got := hintMask(v); got != want {
			t.Fatalf("hintMask(%q) = %b, hinted says %b", v, got, want)
		}
	})
}

func BenchmarkHintMask(b *testing.B) {
	for _, v := range []string{"tools/call", "01JQ8Z6W3N4V0K2R7C5E9G1H3M", `{"content":[{"type":"text","text":"{\"text\":\"x\"}"}],"structuredContent":{"text":"x"}}`, strings.Repeat(`{"path":"/home/user/src/main.go","line":12},`, 5)} {
		b.Run(fmt.Sprintf("len=%d/loop", len(v)), func(b *testing.B) {
			for b.Loop() {
				var m uint32
				for i, f := range secretFormats {
					if hinted(v, f.hints) {
						m |= 1 << i
					}
				}
				sinkMask = m
			}
		})
		b.Run(fmt.Sprintf("len=%d/mask", len(v)), func(b *testing.B) {
			for b.Loop() {
				sinkMask = hintMask(v)
			}
		})
	}
}

var sinkMask uint32
