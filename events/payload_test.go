package events

import (
	"strings"
	"testing"
)

func TestParseRef(t *testing.T) {
	good := PayloadRef(strings.Repeat("z", 5000))
	sum, size, ok := ParseRef(good)
	if !ok || size != 5000 || RefOf(sum, size) != good {
		t.Fatalf("%q: %v %d %v", good, sum, size, ok)
	}
	hex := strings.Repeat("ab", 32)
	for _, v := range []string{
		"", "[PAYLOAD:sha256=", good[:len(good)-1], good + " ", " " + good,
		"[PAYLOAD:sha256=" + strings.ToUpper(hex) + ":size=1]", // one spelling only
		"[PAYLOAD:sha256=" + hex + ":size=01]",
		"[PAYLOAD:sha256=" + hex + ":size=-1]",
		"[PAYLOAD:sha256=" + hex + ":size=]",
		"[PAYLOAD:sha256=" + hex[:62] + ":size=1]",
		"[PAYLOAD:sha256=" + hex + ":size=1:size=2]",
		"[PAYLOAD:sha256=" + hex + ":size=99999999999999]",
	} {
		if _, _, ok := ParseRef(v); ok {
			t.Errorf("%q parsed as a reference", v)
		}
	}
}

// FuzzParseRef: ParseRef never panics, and what it accepts is exactly the
// reference RefOf makes of what it returned (one spelling per payload).
func FuzzParseRef(f *testing.F) {
	f.Add(PayloadRef("x"))
	f.Add("[PAYLOAD:sha256=" + strings.Repeat("0", 64) + ":size=3]")
	f.Add("[PAYLOAD:sha256=zz]")
	f.Fuzz(func(t *testing.T, v string) {
		sum, size, ok := ParseRef(v)
		if ok && RefOf(sum, size) != v {
			t.Fatalf("%q parsed, but its canonical spelling is %q", v, RefOf(sum, size))
		}
		if ok && !looksLikeRef(v) {
			t.Fatalf("%q parsed but does not look like a reference", v)
		}
	})
}
