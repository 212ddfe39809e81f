package events

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The canonical encoding, version 1. One record is
//
//	body  = 0x01 | uvarint seq | id[16] | flags | varint unixNano (if flagTime)
//	        | requestId[16] | operationId[16] | sessionId[16] | parentId[16] (each if its flag)
//	        | str kind | str boundary | str from | str to | str traceparent | str outcome | str code
//	        | float64 durationMs (8 bytes, little endian)
//	        | uvarint nAttrs | (str key | str value)* sorted by key, keys unique
//	record = body | prev[32] | hash[32]
//
// where str is uvarint length + bytes. The same Event always encodes to the
// same bytes, and hash = SHA-256(prev | body), so a store verifies its chain
// without decoding. ADR 0001 says why this and not JSON.
const codecV1 = 0x01

// MaxEventSize caps one encoded event. The emitter truncates attributes long
// before this; the decoder refuses anything larger before allocating.
const MaxEventSize = 256 << 10

const chainLen = 2 * sha256.Size

const (
	flagTime = 1 << iota
	flagRequest
	flagOperation
	flagSession
	flagParent
	flagAll = flagTime | flagRequest | flagOperation | flagSession | flagParent
)

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("malformed event")

// Encode returns the canonical record of e.
func Encode(e *Event) []byte { return appendEncode(make([]byte, 0, 256), e) }

// appendEncode appends the canonical record of e to dst.
func appendEncode(dst []byte, e *Event) []byte {
	dst = AppendBody(dst, e)
	dst = append(dst, e.Prev[:]...)
	return append(dst, e.Hash[:]...)
}

// AppendBody appends the hashed part of the record of e: everything but
// Prev and Hash.
func AppendBody(dst []byte, e *Event) []byte {
	dst = append(dst, codecV1)
	dst = binary.AppendUvarint(dst, e.Seq)
	dst = append(dst, e.ID[:]...)
	var flags byte
	if !e.Time.IsZero() {
		flags |= flagTime
	}
	for i, id := range [...]ID{e.RequestID, e.OperationID, e.SessionID, e.ParentID} {
		if !id.IsZero() {
			flags |= flagRequest << i
		}
	}
	dst = append(dst, flags)
	if flags&flagTime != 0 {
		dst = binary.AppendVarint(dst, e.Time.UnixNano())
	}
	for i, id := range [...]ID{e.RequestID, e.OperationID, e.SessionID, e.ParentID} {
		if flags&(flagRequest<<i) != 0 {
			dst = append(dst, id[:]...)
		}
	}
	for _, s := range [...]string{e.Kind, string(e.Boundary), e.From, e.To, e.Traceparent, string(e.Outcome), string(e.Code)} {
		dst = appendString(dst, s)
	}
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(e.DurationMs))
	dst = binary.AppendUvarint(dst, uint64(len(e.Attrs)))
	attrs := e.Attrs
	if !attrs.sorted() { // built by hand out of order: the record is in key order
		attrs = attrs.Clone()
		slices.SortStableFunc(attrs, func(x, y Attr) int { return strings.Compare(x.Key, y.Key) })
	}
	for _, a := range attrs {
		dst = appendString(dst, a.Key)
		dst = appendString(dst, a.Value)
	}
	return dst
}

func appendString(dst []byte, s string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(s)))
	return append(dst, s...)
}

// ChainHash is the hash of a record whose body is body, following prev.
func ChainHash(prev Hash, body []byte) Hash {
	h := sha256.New()
	h.Write(prev[:])
	h.Write(body)
	var out Hash
	h.Sum(out[:0])
	return out
}

// SplitRecord returns the body, prev and hash of an encoded record without
// decoding the body.
func SplitRecord(rec []byte) (body []byte, prev, hash Hash, err error) {
	if len(rec) < chainLen+1 || rec[0] != codecV1 {
		return nil, prev, hash, fmt.Errorf("%w: record of %d bytes has no v1 body and chain", ErrMalformed, len(rec))
	}
	n := len(rec) - chainLen
	copy(prev[:], rec[n:])
	copy(hash[:], rec[n+32:])
	return rec[:n], prev, hash, nil
}

// RecordID returns the event id of an encoded record without decoding the
// rest; ok is false if rec is not a v1 record long enough to hold one.
func RecordID(rec []byte) (id ID, ok bool) {
	if len(rec) < 2 || rec[0] != codecV1 {
		return id, false
	}
	_, n := binary.Uvarint(rec[1:])
	if n <= 0 || len(rec) < 1+n+len(id) {
		return id, false
	}
	copy(id[:], rec[1+n:])
	return id, true
}

// Decode parses a record made by Encode. It never panics; every error wraps
// ErrMalformed and says where decoding stopped.
func Decode(rec []byte) (Event, error) {
	var e Event
	err := DecodeInto(&e, rec)
	return e, err
}

// DecodeInto is Decode into *dst, which it overwrites: readers decoding
// many records into a slice save a copy of each Event.
func DecodeInto(dst *Event, rec []byte) error {
	if len(rec) > MaxEventSize+chainLen {
		*dst = Event{}
		return fmt.Errorf("%w: %d bytes exceeds the %d-byte cap", ErrMalformed, len(rec), MaxEventSize)
	}
	// One string conversion for the whole record: every string field is a
	// substring of it, so decoding costs one allocation for text plus the
	// attribute map.
	return DecodeString(dst, string(rec))
}

// DecodeString is DecodeInto for a record held in a string. The event's
// string fields share rec's memory, so a reader that copies many records
// into one string decodes them all with a single text allocation.
func DecodeString(dst *Event, rec string) error {
	*dst = Event{}
	e := dst
	if len(rec) > MaxEventSize+chainLen {
		return fmt.Errorf("%w: %d bytes exceeds the %d-byte cap", ErrMalformed, len(rec), MaxEventSize)
	}
	if len(rec) < chainLen+1 || rec[0] != codecV1 {
		return fmt.Errorf("%w: record of %d bytes has no v1 body and chain", ErrMalformed, len(rec))
	}
	bodyLen := len(rec) - chainLen
	var prev, hash Hash
	copy(prev[:], rec[bodyLen:])
	copy(hash[:], rec[bodyLen+32:])
	d := decoder{s: rec[:bodyLen], off: 1}
	e.Seq = d.uvarint("seq")
	d.id(&e.ID, "id")
	flags := d.byte("flags")
	if flags&^flagAll != 0 {
		d.fail("flags", "unknown flag bits %#x", flags)
	}
	if flags&flagTime != 0 {
		e.Time = time.Unix(0, d.varint("time")).UTC()
	}
	for i, p := range [...]*ID{&e.RequestID, &e.OperationID, &e.SessionID, &e.ParentID} {
		if flags&(flagRequest<<i) != 0 {
			d.id(p, "ids")
		}
	}
	e.Kind = d.str("kind")
	e.Boundary = Boundary(d.str("boundary"))
	e.From = d.str("from")
	e.To = d.str("to")
	e.Traceparent = d.str("traceparent")
	e.Outcome = Outcome(d.str("outcome"))
	e.Code = Code(d.str("code"))
	e.DurationMs = math.Float64frombits(d.uint64le("durationMs"))
	n := d.uvarint("attrs")
	if n > uint64(len(d.s)-d.off)/2 {
		d.fail("attrs", "count %d exceeds what the record can hold", n)
	}
	if d.err == nil && n > 0 {
		e.Attrs = make(Attrs, 0, n)
		last := ""
		for i := uint64(0); i < n && d.err == nil; i++ {
			k := d.str("attr key")
			v := d.str("attr value")
			if i > 0 && k <= last {
				d.fail("attrs", "keys not strictly sorted at %q", k)
			}
			e.Attrs = append(e.Attrs, Attr{k, v})
			last = k
		}
	}
	if d.err == nil && d.off != len(d.s) {
		d.fail("end", "%d trailing bytes", len(d.s)-d.off)
	}
	if d.err != nil {
		*dst = Event{}
		return d.err
	}
	e.Prev, e.Hash = prev, hash
	return nil
}

type decoder struct {
	s   string
	off int
	err error
}

func (d *decoder) fail(field, format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s at byte %d: %s", ErrMalformed, field, d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) need(n int, field string) bool {
	if d.err != nil {
		return false
	}
	if n < 0 || n > len(d.s)-d.off {
		d.fail(field, "needs %d bytes, %d left", n, len(d.s)-d.off)
		return false
	}
	return true
}

func (d *decoder) byte(field string) byte {
	if !d.need(1, field) {
		return 0
	}
	d.off++
	return d.s[d.off-1]
}

func (d *decoder) uvarint(field string) uint64 {
	if d.err != nil {
		return 0
	}
	var x uint64
	var s uint
	for i := 0; i < binary.MaxVarintLen64; i++ {
		if d.off >= len(d.s) {
			break
		}
		b := d.s[d.off]
		d.off++
		if b < 0x80 {
			if (i == binary.MaxVarintLen64-1 && b > 1) || (i > 0 && b == 0) {
				break // overflow, or a non-minimal form: the encoding is canonical
			}
			return x | uint64(b)<<s
		}
		x |= uint64(b&0x7f) << s
		s += 7
	}
	d.fail(field, "bad varint")
	return 0
}

func (d *decoder) varint(field string) int64 {
	ux := d.uvarint(field)
	x := int64(ux >> 1)
	if ux&1 != 0 {
		x = ^x
	}
	return x
}

func (d *decoder) id(dst *ID, field string) {
	if d.need(16, field) {
		copy(dst[:], d.s[d.off:d.off+16])
		d.off += 16
	}
}

func (d *decoder) uint64le(field string) uint64 {
	if !d.need(8, field) {
		return 0
	}
	v := binary.LittleEndian.Uint64([]byte(d.s[d.off : d.off+8]))
	d.off += 8
	return v
}

func (d *decoder) str(field string) string {
	n := d.uvarint(field)
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.s)-d.off) {
		d.fail(field, "length %d exceeds the %d bytes left", n, len(d.s)-d.off)
		return ""
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}
