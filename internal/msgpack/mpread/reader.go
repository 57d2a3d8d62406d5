// Package mpread reads msgpack from a byte slice value by value, as the
// reflective decoder of github.com/vmihailenco/msgpack/v5 (default options)
// would decode it into the caller's fields, without reflection and without
// its per-value interface calls (reflective decoding of intents
// and records was a tenth of the executor's CPU).
//
// A reader handles only the forms whose reflective result is plain and
// known; anything else (an ext value, a map key that is not a string, a
// type the caller did not expect) makes a method return ok=false, and the
// caller decodes the whole value reflectively instead. So a hand-written
// decoder built on it accepts, rejects and produces exactly what the
// reflective one does, and its fuzz test can check that by comparing.
//
// Reader never panics and never allocates more than the bytes it reads:
// every length is checked against what remains.
package mpread

import (
	"encoding/binary"
	"math"
)

// Reader reads msgpack values from b, from the front.
type Reader struct {
	b []byte
	i int
}

// New returns a reader of b.
func New(b []byte) Reader { return Reader{b: b} }

func (r *Reader) peek() (byte, bool) {
	if r.i >= len(r.b) {
		return 0, false
	}
	return r.b[r.i], true
}

// n reads a big-endian unsigned integer of w bytes.
func (r *Reader) n(w int) (uint64, bool) {
	if len(r.b)-r.i < w {
		return 0, false
	}
	p := r.b[r.i : r.i+w]
	r.i += w
	switch w {
	case 1:
		return uint64(p[0]), true
	case 2:
		return uint64(binary.BigEndian.Uint16(p)), true
	case 4:
		return uint64(binary.BigEndian.Uint32(p)), true
	}
	return binary.BigEndian.Uint64(p), true
}

// take returns the next n bytes, not copied.
func (r *Reader) take(n uint64) ([]byte, bool) {
	if n > uint64(len(r.b)-r.i) {
		return nil, false
	}
	p := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	return p, true
}

// Nil consumes a nil and reports true, or consumes nothing and reports
// false.
func (r *Reader) Nil() bool {
	if c, ok := r.peek(); ok && c == 0xc0 {
		r.i++
		return true
	}
	return false
}

// MapLen reads a map header (not nil).
func (r *Reader) MapLen() (int, bool) { return r.containerLen(0x80, 0xde) }

// ArrayLen reads an array header (not nil).
func (r *Reader) ArrayLen() (int, bool) { return r.containerLen(0x90, 0xdc) }

// containerLen reads the header of a map or an array: fix, the fix form's
// code with the count in its low nibble, or c16 (then c16+1 for 32 bits)
// with the count after it. A count past what remains is refused.
func (r *Reader) containerLen(fix, c16 byte) (int, bool) {
	c, ok := r.peek()
	if !ok {
		return 0, false
	}
	var n uint64
	switch {
	case c >= fix && c <= fix|0x0f:
		r.i++
		return int(c & 0x0f), true
	case c == c16:
		r.i++
		n, ok = r.n(2)
	case c == c16+1:
		r.i++
		n, ok = r.n(4)
	default:
		return 0, false
	}
	return int(n), ok && n <= uint64(len(r.b)-r.i)
}

// strLen reads a str header.
func (r *Reader) strLen(c byte) (uint64, bool) {
	switch {
	case c >= 0xa0 && c <= 0xbf:
		return uint64(c & 0x1f), true
	case c == 0xd9:
		return r.n(1)
	case c == 0xda:
		return r.n(2)
	case c == 0xdb:
		return r.n(4)
	}
	return 0, false
}

// Key reads a map key that is a msgpack str, without copying it: the
// result aliases the input and is valid only while it is.
func (r *Reader) Key() ([]byte, bool) {
	c, ok := r.peek()
	if !ok {
		return nil, false
	}
	if c >= 0xa0 && c <= 0xbf { // a fixstr: nearly every name
		r.i++
		return r.take(uint64(c & 0x1f))
	}
	save := r.i
	r.i++
	n, ok := r.strLen(c)
	if !ok {
		r.i = save
		return nil, false
	}
	return r.take(n)
}

// String reads a string field: a str, or nil as "" (a Go string field
// decodes nil so). A bin is left to the reflective decoder.
func (r *Reader) String() (string, bool) {
	if r.Nil() {
		return "", true
	}
	p, ok := r.Key()
	if !ok {
		return "", false
	}
	return string(p), true
}

// KeyOrBin reads a map key that is a str or a bin, as the reflective
// decoder reads a struct's field name (a nil name is left to it); like Key
// the result aliases the input. For decoders that take a bin where a str
// is written, as the event envelope's always has.
func (r *Reader) KeyOrBin() ([]byte, bool) {
	c, ok := r.peek()
	if !ok || c == 0xc0 {
		return nil, false
	}
	return r.strOrBin(c)
}

// StringOrBin reads a string field as the reflective decoder does: a
// str, a bin, or nil as "".
func (r *Reader) StringOrBin() (string, bool) {
	if r.Nil() {
		return "", true
	}
	c, ok := r.peek()
	if !ok {
		return "", false
	}
	p, ok := r.strOrBin(c)
	return string(p), ok
}

// strOrBin reads the str or bin whose code c is next, not copied: one
// switch, as the envelope's every string and name goes through it.
func (r *Reader) strOrBin(c byte) ([]byte, bool) {
	save := r.i
	r.i++
	var n uint64
	ok := true
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n = uint64(c & 0x1f)
	case c == 0xc4, c == 0xd9:
		n, ok = r.n(1)
	case c == 0xc5, c == 0xda:
		n, ok = r.n(2)
	case c == 0xc6, c == 0xdb:
		n, ok = r.n(4)
	default:
		ok = false
	}
	if !ok {
		r.i = save
		return nil, false
	}
	return r.take(n)
}

// Bytes reads a []byte field: a bin or a str copied, an empty one as a
// non-nil empty slice, nil as nil (as the reflective decoder does).
func (r *Reader) Bytes() ([]byte, bool) {
	if r.Nil() {
		return nil, true
	}
	c, ok := r.peek()
	if !ok {
		return nil, false
	}
	p, ok := r.strOrBin(c)
	if !ok {
		return nil, false
	}
	return append(make([]byte, 0, len(p)), p...), true
}

// Int64 reads an integer field of a signed Go type: any msgpack integer,
// converted as the reflective decoder converts it (a uint64 wraps), or
// nil as 0.
func (r *Reader) Int64() (int64, bool) {
	c, ok := r.peek()
	if !ok {
		return 0, false
	}
	if c <= 0x7f || c >= 0xe0 {
		r.i++
		return int64(int8(c)), true
	}
	if c == 0xc0 {
		r.i++
		return 0, true
	}
	save := r.i
	r.i++
	var v uint64
	switch c {
	case 0xcc:
		v, ok = r.n(1)
	case 0xcd:
		v, ok = r.n(2)
	case 0xce:
		v, ok = r.n(4)
	case 0xcf, 0xd3:
		v, ok = r.n(8)
	case 0xd0:
		v, ok = r.n(1)
		v = uint64(int8(v))
	case 0xd1:
		v, ok = r.n(2)
		v = uint64(int16(v))
	case 0xd2:
		v, ok = r.n(4)
		v = uint64(int32(v))
	default:
		ok = false
	}
	if !ok {
		r.i = save
		return 0, false
	}
	return int64(v), true
}

// Uint64 reads an integer field of an unsigned Go type as the reflective
// decoder's DecodeUint64 does: any msgpack integer, a negative one
// wrapped, nil as 0; the caller narrows it as reflection does (a uint8
// field keeps the low byte).
func (r *Reader) Uint64() (uint64, bool) {
	n, ok := r.Int64()
	return uint64(n), ok
}

// Uint8 reads an integer field of a uint8 type whose value fits it; a
// value that would wrap is left to the reflective decoder.
func (r *Reader) Uint8() (uint8, bool) {
	save := r.i
	n, ok := r.Int64()
	if !ok || n < 0 || n > math.MaxUint8 {
		r.i = save
		return 0, false
	}
	return uint8(n), true
}

// Bool reads a bool field: true, false, or nil as false.
func (r *Reader) Bool() (bool, bool) {
	c, ok := r.peek()
	if !ok {
		return false, false
	}
	switch c {
	case 0xc0, 0xc2:
		r.i++
		return false, true
	case 0xc3:
		r.i++
		return true, true
	}
	return false, false
}
