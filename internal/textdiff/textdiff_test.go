package textdiff

import "testing"

func TestUnified(t *testing.T) {
	for _, tc := range []struct{ a, b, want string }{
		{"a\nb\nc\n", "a\nB\nc\n", "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"a\n", "a\nb\n", "--- a/f\n+++ b/f\n@@ -1,1 +1,2 @@\n a\n+b\n"},
		{"a\nb", "a\nc", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"},
		{"", "x\n", "--- a/f\n+++ b/f\n@@ -1,0 +1,1 @@\n+x\n"},
		{"same\n", "same\n", ""},
	} {
		if got := Unified("f", tc.a, tc.b); got != tc.want {
			t.Errorf("diff %q → %q:\n%q\nwant\n%q", tc.a, tc.b, got, tc.want)
		}
	}
}
