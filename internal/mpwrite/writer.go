// Package mpwrite writes msgpack maps field by field, as the reflective
// encoder of github.com/vmihailenco/msgpack/v5 writes a struct: the same
// field order (the caller's), the same integer widths (an int64 field as
// 9 bytes, an int in its shortest form, a uint8 as 2 bytes), omitempty
// fields left out when empty. The callers' fuzz tests compare their bytes
// with the reflective encoder's (issue 17: reflection, with its per-encode
// list of omitempty fields, was a quarter of the executor's CPU).
package mpwrite

import (
	"bytes"
	"sync"

	"github.com/vmihailenco/msgpack/v5"
)

// bufferKeep bounds the buffer a pooled writer keeps between values: a
// value with a large result (up to a Kafka record) would otherwise pin its
// buffer in the pool for good.
const bufferKeep = 64 << 10

// Writer writes one value, keeping the first error. Get one with Get,
// return it with Put.
type Writer struct {
	buf bytes.Buffer
	enc *msgpack.Encoder
	err error
}

var pool = sync.Pool{New: func() any {
	w := &Writer{}
	w.enc = msgpack.NewEncoder(&w.buf)
	return w
}}

// Get returns an empty writer from the pool.
func Get() *Writer { return pool.Get().(*Writer) }

// Put returns w to the pool, unless its buffer grew past bufferKeep.
func Put(w *Writer) {
	if w.buf.Cap() > bufferKeep {
		return
	}
	w.buf.Reset()
	w.err = nil
	pool.Put(w)
}

// Bytes returns a copy of what was written, or the first error.
func (w *Writer) Bytes() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	return bytes.Clone(w.buf.Bytes()), nil
}

func (w *Writer) keep(err error) {
	if w.err == nil {
		w.err = err
	}
}

// MapLen starts a map of n entries.
func (w *Writer) MapLen(n int) { w.keep(w.enc.EncodeMapLen(n)) }

// ArrayLen starts an array of n values.
func (w *Writer) ArrayLen(n int) { w.keep(w.enc.EncodeArrayLen(n)) }

// Name writes a field's name; its value follows.
func (w *Writer) Name(s string) { w.keep(w.enc.EncodeString(s)) }

// Str writes a string field.
func (w *Writer) Str(name, s string) {
	w.Name(name)
	w.keep(w.enc.EncodeString(s))
}

// Int64 writes an int64 field (9 bytes, as reflection writes an int64).
func (w *Writer) Int64(name string, n int64) {
	w.Name(name)
	w.keep(w.enc.EncodeInt64(n))
}

// Int writes an int field (shortest form, as reflection writes an int).
func (w *Writer) Int(name string, n int) {
	w.Name(name)
	w.keep(w.enc.EncodeInt(int64(n)))
}

// Uint8 writes a uint8 field (2 bytes).
func (w *Writer) Uint8(name string, n uint8) {
	w.Name(name)
	w.keep(w.enc.EncodeUint8(n))
}

// BytesField writes a []byte field; nil is msgpack's nil.
func (w *Writer) BytesField(name string, b []byte) {
	w.Name(name)
	w.keep(w.enc.EncodeBytes(b))
}

// True writes a bool field that is true (an omitempty bool is written
// only then).
func (w *Writer) True(name string) {
	w.Name(name)
	w.keep(w.enc.EncodeBool(true))
}

// Bool writes a bool field.
func (w *Writer) Bool(name string, b bool) {
	w.Name(name)
	w.keep(w.enc.EncodeBool(b))
}

// OptStr writes an omitempty string field.
func (w *Writer) OptStr(name, s string) {
	if s != "" {
		w.Str(name, s)
	}
}

// OptBytes writes an omitempty []byte field.
func (w *Writer) OptBytes(name string, b []byte) {
	if len(b) > 0 {
		w.BytesField(name, b)
	}
}

// OptInt64 writes an omitempty int64 field.
func (w *Writer) OptInt64(name string, n int64) {
	if n != 0 {
		w.Int64(name, n)
	}
}

// Count counts the true conditions: a map's length is that of the fields
// it writes.
func Count(conds ...bool) int {
	n := 0
	for _, c := range conds {
		if c {
			n++
		}
	}
	return n
}
