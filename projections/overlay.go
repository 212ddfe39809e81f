package projections

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"

	"github.com/tracebridge/tracebridge/store"
)

// overlay is a view whose writes stay in memory over a read-only base: the
// projector folds a chunk of events into one, then writes each key it
// touched once; a reader on a store no hub holds folds the events the stored
// state lacks. State a projection keeps decoded (loadState, saveState) stays
// decoded for the whole chunk and is encoded once, by flush.
type overlay struct {
	base  store.View
	m     map[string][]byte
	typed map[string]any // decoded state, newer than m and base
}

func (o *overlay) Get(k []byte) []byte {
	if t, ok := o.typed[string(k)]; ok {
		b, _ := json.Marshal(t)
		return b
	}
	if v, ok := o.m[string(k)]; ok {
		return v
	}
	return o.base.Get(k)
}

func (o *overlay) Put(k, v []byte) error {
	delete(o.typed, string(k))
	o.m[string(k)] = bytes.Clone(v)
	return nil
}

func (o *overlay) Delete(k []byte) error {
	delete(o.typed, string(k))
	o.m[string(k)] = nil
	return nil
}

// keep holds decoded state for k until flush.
func (o *overlay) keep(k []byte, t any) {
	if o.typed == nil {
		o.typed = map[string]any{}
	}
	o.typed[string(k)] = t
}

// flush encodes the decoded state into m.
func (o *overlay) flush() error {
	for k, t := range o.typed {
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		o.m[k] = b
	}
	o.typed = nil
	return nil
}

func (o *overlay) ForEach(fn func(k, v []byte) error) error {
	if err := o.flush(); err != nil {
		return err
	}
	return o.walk(false, fn)
}

func (o *overlay) Reverse(fn func(k, v []byte) error) error {
	if err := o.flush(); err != nil {
		return err
	}
	return o.walk(true, fn)
}

// walk merges the base's keys with the overlay's in key order.
func (o *overlay) walk(reverse bool, visit func(k, v []byte) error) error {
	stop := false
	fn := func(k, v []byte) error {
		err := visit(k, v)
		stop = errors.Is(err, store.ErrStop)
		return err
	}
	keys := make([]string, 0, len(o.m))
	for k := range o.m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if reverse {
		slices.Reverse(keys)
	}
	before := func(a, b string) bool { // a comes first in the walk
		if reverse {
			return a > b
		}
		return a < b
	}
	i := 0
	yield := func(k string) error {
		if v := o.m[k]; v != nil {
			return fn([]byte(k), v)
		}
		return nil
	}
	walk := o.base.ForEach
	if reverse {
		walk = o.base.Reverse
	}
	err := walk(func(k, v []byte) error {
		for ; i < len(keys) && before(keys[i], string(k)); i++ {
			if err := yield(keys[i]); err != nil {
				return err
			}
		}
		if i < len(keys) && keys[i] == string(k) {
			i++
			return yield(string(k))
		}
		return fn(k, v)
	})
	if err != nil || stop {
		return err
	}
	for ; i < len(keys); i++ {
		if err := yield(keys[i]); err != nil {
			if stop {
				return nil
			}
			return err
		}
	}
	return nil
}

// emptyBase stands for stored state of another version, which a reader
// must not use.
type emptyBase struct{}

func (emptyBase) Get([]byte) []byte                     { return nil }
func (emptyBase) Put(_, _ []byte) error                 { return nil }
func (emptyBase) Delete([]byte) error                   { return nil }
func (emptyBase) ForEach(func(k, v []byte) error) error { return nil }
func (emptyBase) Reverse(func(k, v []byte) error) error { return nil }
