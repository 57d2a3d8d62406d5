package mpread

import (
	"bytes"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// same reports whether two decoded values are equal, NaN included (fmt
// prints maps sorted, so %#v is a stable form).
func same(a, b any) bool {
	return reflect.DeepEqual(a, b) || fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b)
}

// checkAny: where Any reads b, the reflective DecodeInterface reads the
// same value and the same number of bytes; Skip passes the same bytes.
func checkAny(t *testing.T, b []byte) {
	t.Helper()
	r := New(b)
	got, ok := r.Any()
	s := New(b)
	skipped := s.Skip()
	d := msgpack.NewDecoder(bytes.NewReader(b))
	if skipped {
		if err := d.Skip(); err != nil {
			t.Fatalf("%x: Skip passed %d bytes, reflective Skip failed: %v", b, s.Offset(), err)
		}
		if rest := len(b) - s.Offset(); rest != d.Buffered().(*bytes.Reader).Len() {
			t.Fatalf("%x: Skip passed %d bytes, reflective Skip left %d", b, s.Offset(), d.Buffered().(*bytes.Reader).Len())
		}
	}
	if !ok {
		return
	}
	if !skipped {
		t.Fatalf("%x: Any read it, Skip did not", b)
	}
	want, err := msgpack.NewDecoder(bytes.NewReader(b)).DecodeInterface()
	if err != nil {
		t.Fatalf("%x: Any read %#v, reflective failed: %v", b, got, err)
	}
	if !same(got, want) {
		t.Fatalf("%x: Any read %#v, reflective %#v", b, got, want)
	}
	if r.Offset() != s.Offset() {
		t.Fatalf("%x: Any read %d bytes, Skip %d", b, r.Offset(), s.Offset())
	}
}

func mustMarshal(t testing.TB, v any) []byte {
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAnyMatchesReflectionForEveryKind: every msgpack kind Any handles
// decodes to the reflective DecodeInterface's value and Go type.
func TestAnyMatchesReflectionForEveryKind(t *testing.T) {
	values := []any{nil, true, false, 0, 1, -1, 127, -32, -33, 128, 255, 256, -129, 65535, 65536, -32769, math.MaxUint32 + 1,
		int64(math.MinInt64), uint64(math.MaxUint64), float32(1.5), 2.5, math.NaN(), "", "s", string(make([]byte, 40)),
		string(make([]byte, 300)), string(make([]byte, 70000)), []byte{}, []byte{1}, make([]byte, 300), []any{}, []any{1, "a"},
		make([]any, 20), map[string]any{}, map[string]any{"a": map[string]any{"b": []any{nil}}}, map[string]any{"k": 1.0}}
	for i := range 20 {
		m := map[string]any{}
		for j := range i {
			m[fmt.Sprint(j)] = j
		}
		values = append(values, m)
	}
	for _, v := range values {
		b := mustMarshal(t, v)
		r := New(b)
		if _, ok := r.Any(); !ok {
			t.Fatalf("%#v (%x): Any left it to reflection", v, b)
		}
		checkAny(t, b)
	}
}

// TestAnyLeavesTheRestToReflection: an ext value, a non-str map key and
// truncated input are not read (the caller falls back).
func TestAnyLeavesTheRestToReflection(t *testing.T) {
	for _, b := range [][]byte{
		{0xd4, 0x01, 0x00}, {0xc7, 0x01, 0x05, 0x00}, {0x81, 0x01, 0x02}, {0x81, 0xc4, 0x01, 'a', 0x02},
		{0xc1}, {}, {0xa3, 'a'}, {0xcd, 0x01}, {0xdc, 0xff, 0xff}, {0x91, 0xd4, 0x00, 0x00},
	} {
		r := New(b)
		if v, ok := r.Any(); ok {
			t.Fatalf("%x: Any read %#v", b, v)
		}
		checkAny(t, b)
	}
}

// TestFieldReaders: the typed readers decode as the reflective decoder
// decodes into a field of that type.
func TestFieldReaders(t *testing.T) {
	type fields struct {
		S  string
		B  []byte
		I  int64
		U  uint8
		OK bool
	}
	for _, v := range []any{nil, "", "abc", []byte{}, []byte{7}, 0, -5, 200, math.MaxInt64, uint64(math.MaxUint64), true, false} {
		b := mustMarshal(t, v)
		for name, read := range map[string]func(r *Reader) (any, bool){
			"S":  func(r *Reader) (any, bool) { return r.String() },
			"B":  func(r *Reader) (any, bool) { return r.Bytes() },
			"I":  func(r *Reader) (any, bool) { return r.Int64() },
			"U":  func(r *Reader) (any, bool) { return r.Uint8() },
			"OK": func(r *Reader) (any, bool) { return r.Bool() },
		} {
			r := New(b)
			got, ok := read(&r)
			var f fields
			err := msgpack.Unmarshal(append([]byte{0x81, 0xa0 | byte(len(name))}, append([]byte(name), b...)...), &f)
			if !ok {
				continue // left to reflection: nothing to compare
			}
			if err != nil {
				t.Fatalf("%s from %#v: read %#v, reflection failed: %v", name, v, got, err)
			}
			if want := reflect.ValueOf(f).FieldByName(name).Interface(); !same(got, want) {
				t.Fatalf("%s from %#v: read %#v, reflection %#v", name, v, got, want)
			}
			if r.Offset() != len(b) {
				t.Fatalf("%s from %#v: read %d of %d bytes", name, v, r.Offset(), len(b))
			}
		}
	}
}

// FuzzAnyMatchesReflection: for any bytes, what Any reads is what the
// reflective DecodeInterface reads, and Skip passes what it passes.
func FuzzAnyMatchesReflection(f *testing.F) {
	f.Add([]byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0x92, 0xc3, 0xcb, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0xd4, 0x01, 0x00})
	f.Add([]byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := New(b)
		if _, ok := r.Any(); ok && !shapeFits(b) { // Any never panics, whatever b holds
			t.Fatalf("%x: Any read it, Skip did not", b)
		}
		if len(b) > 4096 || !shapeFits(b) {
			return // the reflective decoder would preallocate from declared lengths
		}
		checkAny(t, b)
	})
}

// shapeFits reports whether every container in b declares no more
// elements than bytes remain (what CheckShape guarantees before
// any reflective decode in the executor).
func shapeFits(b []byte) bool {
	r := New(b)
	return r.Skip()
}

// Offset is the number of bytes read so far.
func (r *Reader) Offset() int { return r.i }
