package events

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"
)

func TestAttrsKeepKeyOrder(t *testing.T) {
	a := A("b", "2", "a", "1", "c", "3", "a", "one")
	if len(a) != 3 || a[0] != (Attr{"a", "one"}) || a[1].Key != "b" || a[2].Key != "c" {
		t.Fatalf("A: %v", a)
	}
	shared := a
	a.Set("ab", "x") // inserting never shifts a slice another event shares
	if len(shared) != 3 || shared[1].Key != "b" || a.Get("ab") != "x" || a[1].Key != "ab" {
		t.Fatalf("after Set: %v, shared %v", a, shared)
	}
	a.Delete("b")
	if _, ok := a.Lookup("b"); ok || len(a) != 3 {
		t.Fatalf("after Delete: %v", a)
	}
	with := a.With("aa", "y").With("c", "three")
	if with.Get("aa") != "y" || with.Get("c") != "three" || !with.sorted() || a.Get("aa") != "" || a.Get("c") != "3" {
		t.Fatalf("With: %v, from %v", with, a)
	}
	big := Attrs{}
	for _, k := range []string{"k9", "k1", "k5", "k3", "k7", "k2", "k8", "k4", "k6", "k0", "k11", "k10"} {
		big.Set(k, k)
	}
	if !big.sorted() || big.Get("k10") != "k10" || big.Get("k12") != "" {
		t.Fatalf("binary search over %d: %v", len(big), big)
	}
	if !maps.Equal(AttrsOf(big.Map()).Map(), big.Map()) {
		t.Fatal("Map and AttrsOf do not round-trip")
	}
}

// Attributes marshal to the JSON a map would (every export, session file
// and API answer stays byte for byte what it was), with and without HTML
// escaping; whatever unmarshals, re-marshals to itself.
func FuzzAttrsJSON(f *testing.F) {
	f.Add([]byte(`{"a":"<b>&","z":"\u2028","m":"\u0000x\ufffd"}`))
	f.Add([]byte(`{"k":"v","k":"w"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Attrs
		if err := json.Unmarshal(b, &a); err != nil {
			return
		}
		m := a.Map()
		for _, html := range []bool{true, false} {
			var got, want bytes.Buffer
			for buf, v := range map[*bytes.Buffer]any{&got: a, &want: m} {
				enc := json.NewEncoder(buf)
				enc.SetEscapeHTML(html)
				if err := enc.Encode(v); err != nil {
					t.Fatal(err)
				}
			}
			if got.String() != want.String() {
				t.Fatalf("escapeHTML %v: attrs %s, map %s", html, got.String(), want.String())
			}
		}
		var back Attrs
		out, _ := json.Marshal(a)
		if err := json.Unmarshal(out, &back); err != nil || !maps.Equal(back.Map(), m) {
			t.Fatalf("round trip: %v %v", back, err)
		}
	})
}
