package events

import (
	"strings"
	"testing"
)

// SEC1: a registered secret is redacted whatever its case, and so is each
// long run of letters and digits in it (what a tokenizer makes of it);
// short runs and unrelated text are kept.
func TestRedactorFoldsCase(t *testing.T) {
	r := NewRedactor(make([]byte, 32))
	const sec = "ghp_ZqCanaryMixedCase0123-abc"
	if err := r.Register(sec); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		"token " + strings.ToLower(sec),
		"TOKEN " + strings.ToUpper(sec),
		`{"matchedTerms":["zqcanarymixedcase0123"]}`,
		"zQcAnArYmIxEdCaSe0123 at the end",
	} {
		out := r.Value("text", in)
		if strings.Contains(strings.ToLower(out), "zqcanarymixedcase0123") || !strings.Contains(out, "[REDACTED:secret:") {
			t.Errorf("%q → %q", in, out)
		}
	}
	if out := r.Value("text", "the abc of ghp tokens"); out != "the abc of ghp tokens" {
		t.Errorf("short runs are redacted: %q", out)
	}
	if !r.Covers("ZQCANARYMIXEDCASE") || !r.Covers("3-abc") || r.Covers("unrelated") {
		t.Error("Covers: wrong about parts of the secret")
	}
	// One secret, one fingerprint, whatever the spelling.
	a, b := r.Value("t", sec), r.Value("t", strings.ToUpper(sec))
	if a != b {
		t.Errorf("%q and %q differ", a, b)
	}
}
