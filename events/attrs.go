package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"sort"
	"strings"
)

// Attr is one attribute of an event.
type Attr struct{ Key, Value string }

// Attrs are an event's attributes, sorted by key, keys unique: the order
// the canonical encoding stores them in, so decoding one is a slice, not a
// map (a request's 50 events decode with no per-event map).
type Attrs []Attr

// AttrsOf returns m's entries as Attrs.
func AttrsOf(m map[string]string) Attrs {
	if len(m) == 0 {
		return nil
	}
	a := make(Attrs, 0, len(m))
	for k, v := range m {
		a = append(a, Attr{k, v})
	}
	slices.SortFunc(a, func(x, y Attr) int { return strings.Compare(x.Key, y.Key) })
	return a
}

// A returns the attributes of key, value pairs; a later pair wins over an
// earlier one with the same key. It panics on an odd count.
func A(kv ...string) Attrs {
	if len(kv)%2 != 0 {
		panic("events.A: odd number of arguments")
	}
	if len(kv) == 0 {
		return nil
	}
	a := make(Attrs, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		a = append(a, Attr{kv[i], kv[i+1]})
	}
	return sortedLastWins(a)
}

// sortedLastWins sorts a by key in place, keeping of equal keys the one
// given last.
func sortedLastWins(a Attrs) Attrs {
	slices.SortStableFunc(a, func(x, y Attr) int { return strings.Compare(x.Key, y.Key) })
	out := a[:0] // of equal keys, the last pair given
	for i := range a {
		if i+1 < len(a) && a[i+1].Key == a[i].Key {
			continue
		}
		out = append(out, a[i])
	}
	return out
}

func (a Attrs) index(k string) (int, bool) {
	if len(a) <= 8 {
		for i, x := range a {
			if x.Key >= k {
				return i, x.Key == k
			}
		}
		return len(a), false
	}
	i := sort.Search(len(a), func(i int) bool { return a[i].Key >= k })
	return i, i < len(a) && a[i].Key == k
}

// Get returns the value of k, or "".
func (a Attrs) Get(k string) string {
	v, _ := a.Lookup(k)
	return v
}

// Lookup returns the value of k and whether it is set.
func (a Attrs) Lookup(k string) (string, bool) {
	if i, ok := a.index(k); ok {
		return a[i].Value, true
	}
	return "", false
}

// Set sets k to v, keeping the order.
func (a *Attrs) Set(k, v string) {
	i, ok := a.index(k)
	if ok {
		(*a)[i].Value = v
		return
	}
	// Clipped, the insert always copies: a slice shared with another event
	// (a copy of an Event shares its Attrs) never has elements shifted
	// under it.
	*a = slices.Insert(slices.Clip(*a), i, Attr{k, v})
}

// Delete removes k.
func (a *Attrs) Delete(k string) {
	if i, ok := a.index(k); ok {
		*a = slices.Delete(*a, i, i+1)
	}
}

// With returns a copy of a with k set to v (one allocation; nothing is
// shared with a, which is left as it was).
func (a Attrs) With(k, v string) Attrs {
	i, ok := a.index(k)
	if ok {
		out := slices.Clone(a)
		out[i].Value = v
		return out
	}
	out := make(Attrs, len(a)+1)
	copy(out, a[:i])
	out[i] = Attr{k, v}
	copy(out[i+1:], a[i:])
	return out
}

// Clone returns a copy that shares nothing with a.
func (a Attrs) Clone() Attrs { return slices.Clone(a) }

// All yields every key and value in key order.
func (a Attrs) All() iter.Seq2[string, string] {
	return func(yield func(string, string) bool) {
		for _, x := range a {
			if !yield(x.Key, x.Value) {
				return
			}
		}
	}
}

// Map returns the attributes as a new map.
func (a Attrs) Map() map[string]string {
	if a == nil {
		return nil
	}
	m := make(map[string]string, len(a))
	for _, x := range a {
		m[x.Key] = x.Value
	}
	return m
}

// sorted reports whether a is in key order with unique keys.
func (a Attrs) sorted() bool {
	for i := 1; i < len(a); i++ {
		if a[i-1].Key >= a[i].Key {
			return false
		}
	}
	return true
}

// MarshalJSON writes a JSON object in key order, as a map would be.
func (a Attrs) MarshalJSON() ([]byte, error) {
	if a == nil {
		return []byte("null"), nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the caller's encoder escapes HTML if it does
	b.WriteByte('{')
	for i, x := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		enc.Encode(x.Key)
		b.Truncate(b.Len() - 1) // Encode's newline
		b.WriteByte(':')
		enc.Encode(x.Value)
		b.Truncate(b.Len() - 1)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a JSON object of strings.
func (a *Attrs) UnmarshalJSON(b []byte) error {
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("attrs: %w", err)
	}
	*a = AttrsOf(m)
	return nil
}
