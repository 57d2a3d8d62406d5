// Package mpwrite writes msgpack maps field by field, as the reflective
// encoder of github.com/vmihailenco/msgpack/v5 writes a struct's fields:
// the same integer widths (an int64 field as 9 bytes, an int in its
// shortest form, a uint8 as 2 bytes), the same headers. Which fields, in
// which order, internal/msgpack/mpstruct decides from a struct's plan; the
// canonical arguments and the JSON-shaped results are written here
// (canonical.go, JSONValue). The callers' fuzz tests compare their bytes
// with the reflective encoder's (reflection, with its per-encode list of
// omitempty fields, was a quarter of the executor's CPU).
package mpwrite

import (
	"bytes"
	"encoding/binary"
	"math"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// bufferKeep bounds the buffer a pooled writer keeps between values: a
// value with a large result (up to a Kafka record) would otherwise pin its
// buffer in the pool for good.
const bufferKeep = 64 << 10

// Writer writes one value, keeping the first error. Get one with Get,
// return it with Put. It appends to its own buffer directly (the
// msgpack.Encoder's per-byte interface calls were a third of the cost of
// a record's encode); only Any goes through an encoder.
type Writer struct {
	buf []byte
	enc *msgpack.Encoder // made on first use by Any; writes to buf
	err error
}

// appender lets a msgpack.Encoder write into a Writer's buffer.
type appender Writer

func (a *appender) Write(p []byte) (int, error) {
	a.buf = append(a.buf, p...)
	return len(p), nil
}

func (a *appender) WriteByte(c byte) error {
	a.buf = append(a.buf, c)
	return nil
}

var pool = sync.Pool{New: func() any { return &Writer{buf: make([]byte, 0, 512)} }}

// Get returns an empty writer from the pool.
func Get() *Writer { return pool.Get().(*Writer) }

// Put returns w to the pool, unless its buffer grew past bufferKeep.
func Put(w *Writer) {
	if cap(w.buf) > bufferKeep {
		return
	}
	w.buf = w.buf[:0]
	w.err = nil
	pool.Put(w)
}

// Bytes returns a copy of what was written, or the first error.
func (w *Writer) Bytes() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	return bytes.Clone(w.buf), nil
}

// Borrow returns the bytes written so far without copying them: valid
// only until the writer is Put back. For a caller that copies them itself
// (pebble's Batch.Set does), so that a value is copied once, not twice.
func (w *Writer) Borrow() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	return w.buf, nil
}

func (w *Writer) keep(err error) {
	if w.err == nil {
		w.err = err
	}
}

// head writes a header: the fix form when n < fix (code fixCode|n),
// else code c8 (when not 0) with 1 byte, c16 with 2 bytes or c32 with 4,
// the narrowest that holds n, as msgpack.Encoder does.
func (w *Writer) head(n int, fix int, fixCode, c8, c16, c32 byte) {
	switch {
	case n < fix:
		w.buf = append(w.buf, fixCode|byte(n))
	case c8 != 0 && n <= math.MaxUint8:
		w.buf = append(w.buf, c8, byte(n))
	case n <= math.MaxUint16:
		w.buf = binary.BigEndian.AppendUint16(append(w.buf, c16), uint16(n))
	default:
		w.buf = binary.BigEndian.AppendUint32(append(w.buf, c32), uint32(n))
	}
}

// MapLen starts a map of n entries.
func (w *Writer) MapLen(n int) { w.head(n, 16, 0x80, 0, 0xde, 0xdf) }

// ArrayLen starts an array of n values.
func (w *Writer) ArrayLen(n int) { w.head(n, 16, 0x90, 0, 0xdc, 0xdd) }

// Name writes a field's name; its value follows.
func (w *Writer) Name(s string) { w.str(s) }

func (w *Writer) str(s string) {
	w.head(len(s), 32, 0xa0, 0xd9, 0xda, 0xdb)
	w.buf = append(w.buf, s...)
}

// Encoded writes b, which is msgpack already: a name encoded once
// (EncodeName), a msgpack.RawMessage.
func (w *Writer) Encoded(b []byte) { w.buf = append(w.buf, b...) }

// EncodeName is s as Name writes it, to be written again with Encoded.
func EncodeName(s string) []byte {
	w := Writer{}
	w.Name(s)
	return w.buf
}

// The fields by kind: Str writes a name and a string, StrValue the
// string alone (after Name or Encoded); likewise for each kind.

// Str writes a string field.
func (w *Writer) Str(name, s string) {
	w.Name(name)
	w.StrValue(s)
}

// StrValue writes a string.
func (w *Writer) StrValue(s string) { w.str(s) }

// Int64 writes an int64 field (9 bytes, as reflection writes an int64).
func (w *Writer) Int64(name string, n int64) {
	w.Name(name)
	w.Int64Value(n)
}

// Int64Value writes an int64 in 9 bytes.
func (w *Writer) Int64Value(n int64) {
	w.buf = binary.BigEndian.AppendUint64(append(w.buf, 0xd3), uint64(n))
}

// Int writes an int field (shortest form, as reflection writes an int).
func (w *Writer) Int(name string, n int) {
	w.Name(name)
	w.IntValue(n)
}

// IntValue writes an int in its shortest form.
func (w *Writer) IntValue(n int) { w.int(int64(n)) }

// int writes n in its shortest form (msgpack.Encoder.EncodeInt).
func (w *Writer) int(n int64) {
	switch {
	case n >= 0:
		w.uint(uint64(n))
	case n >= -32:
		w.buf = append(w.buf, byte(n))
	case n >= math.MinInt8:
		w.buf = append(w.buf, 0xd0, byte(n))
	case n >= math.MinInt16:
		w.buf = binary.BigEndian.AppendUint16(append(w.buf, 0xd1), uint16(n))
	case n >= math.MinInt32:
		w.buf = binary.BigEndian.AppendUint32(append(w.buf, 0xd2), uint32(n))
	default:
		w.buf = binary.BigEndian.AppendUint64(append(w.buf, 0xd3), uint64(n))
	}
}

// uint writes n in its shortest form (msgpack.Encoder.EncodeUint).
func (w *Writer) uint(n uint64) {
	switch {
	case n <= math.MaxInt8:
		w.buf = append(w.buf, byte(n))
	case n <= math.MaxUint8:
		w.buf = append(w.buf, 0xcc, byte(n))
	case n <= math.MaxUint16:
		w.buf = binary.BigEndian.AppendUint16(append(w.buf, 0xcd), uint16(n))
	case n <= math.MaxUint32:
		w.buf = binary.BigEndian.AppendUint32(append(w.buf, 0xce), uint32(n))
	default:
		w.buf = binary.BigEndian.AppendUint64(append(w.buf, 0xcf), n)
	}
}

// Uint8 writes a uint8 field (2 bytes).
func (w *Writer) Uint8(name string, n uint8) {
	w.Name(name)
	w.Uint8Value(n)
}

// Uint8Value writes a uint8 in 2 bytes.
func (w *Writer) Uint8Value(n uint8) { w.buf = append(w.buf, 0xcc, n) }

// BytesField writes a []byte field; nil is msgpack's nil.
func (w *Writer) BytesField(name string, b []byte) {
	w.Name(name)
	w.BytesValue(b)
}

// BytesValue writes a bin, or nil for a nil slice.
func (w *Writer) BytesValue(b []byte) {
	if b == nil {
		w.buf = append(w.buf, 0xc0)
		return
	}
	w.head(len(b), 0, 0, 0xc4, 0xc5, 0xc6)
	w.buf = append(w.buf, b...)
}

// Bool writes a bool field.
func (w *Writer) Bool(name string, b bool) {
	w.Name(name)
	w.BoolValue(b)
}

// BoolValue writes a bool.
func (w *Writer) BoolValue(b bool) {
	if b {
		w.buf = append(w.buf, 0xc3)
	} else {
		w.buf = append(w.buf, 0xc2)
	}
}

// Raw writes a field whose value is msgpack already (a
// msgpack.RawMessage, which reflection writes as it is).
func (w *Writer) Raw(name string, b []byte) {
	w.Name(name)
	w.Encoded(b)
}

// Any writes a field of an interface or other type by reflection, for
// values whose type is not known here (a tool's result).
func (w *Writer) Any(name string, v any) {
	w.Name(name)
	if w.enc == nil {
		w.enc = msgpack.NewEncoder((*appender)(w))
	}
	w.keep(w.enc.Encode(v))
}

// Nil writes msgpack's nil (a field's value: its name comes first).
func (w *Writer) Nil() { w.buf = append(w.buf, 0xc0) }

// JSONValue writes a value of the shapes encoding/json decodes into an
// any (nil, bool, float64, string, []any, map[string]any; a tool's
// result), as msgpack.Marshal writes it, map entries in Go's iteration
// order as msgpack.Marshal's own. For a value holding any other type it
// writes nothing and reports false: the caller encodes it reflectively.
func (w *Writer) JSONValue(v any) bool { return w.whole(v, w.json) }

// whole writes v with write, or nothing when write reports false.
func (w *Writer) whole(v any, write func(any) bool) bool {
	start := len(w.buf)
	if !write(v) {
		w.buf = w.buf[:start]
		return false
	}
	return true
}

func (w *Writer) json(v any) bool {
	switch v := v.(type) {
	case nil:
		w.buf = append(w.buf, 0xc0)
	case bool:
		if v {
			w.buf = append(w.buf, 0xc3)
		} else {
			w.buf = append(w.buf, 0xc2)
		}
	case float64:
		w.buf = binary.BigEndian.AppendUint64(append(w.buf, 0xcb), math.Float64bits(v))
	case string:
		w.str(v)
	case []any:
		return w.array(v, w.json)
	case map[string]any:
		if v == nil {
			w.buf = append(w.buf, 0xc0)
			return true
		}
		w.MapLen(len(v))
		for k, e := range v {
			w.str(k)
			if !w.json(e) {
				return false
			}
		}
	default:
		return false
	}
	return true
}

// array writes a []any (nil as nil), each element with elem; false when
// an element is not one elem writes.
func (w *Writer) array(v []any, elem func(any) bool) bool {
	if v == nil {
		w.Nil()
		return true
	}
	w.ArrayLen(len(v))
	for _, e := range v {
		if !elem(e) {
			return false
		}
	}
	return true
}

// AppendJSONValue encodes v as JSONValue does into a new slice, or
// reports false.
func AppendJSONValue(v any) ([]byte, bool) {
	w := Get()
	defer Put(w)
	if !w.JSONValue(v) {
		return nil, false
	}
	return bytes.Clone(w.buf), true
}
