package mpwrite

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// checkWriter writes one field of each kind with w and with a
// msgpack.Encoder and compares the bytes.
func checkWriter(t *testing.T, s string, n int64, b []byte, l int) {
	t.Helper()
	w := Get()
	defer Put(w)
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	w.MapLen(l)
	_ = e.EncodeMapLen(l)
	w.ArrayLen(l)
	_ = e.EncodeArrayLen(l)
	w.Str(s, s)
	_ = e.EncodeString(s)
	_ = e.EncodeString(s)
	w.Int64("i", n)
	_ = e.EncodeString("i")
	_ = e.EncodeInt64(n)
	w.Int("n", int(n))
	_ = e.EncodeString("n")
	_ = e.EncodeInt(n)
	w.Uint8("u", uint8(n))
	_ = e.EncodeString("u")
	_ = e.EncodeUint8(uint8(n))
	w.BytesField("b", b)
	_ = e.EncodeString("b")
	_ = e.EncodeBytes(b)
	w.Bool("f", n%2 == 0)
	_ = e.EncodeString("f")
	_ = e.EncodeBool(n%2 == 0)
	w.Any("a", map[string]any{s: n})
	_ = e.EncodeString("a")
	_ = e.Encode(map[string]any{s: n})
	w.Raw("r", []byte{0x01})
	_ = e.EncodeString("r")
	_ = e.Encode(msgpack.RawMessage{0x01})
	got, err := w.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, buf.Bytes()) {
		t.Fatalf("s=%d bytes n=%d b=%d bytes l=%d:\n writer  %x\n encoder %x", len(s), n, len(b), l, got, buf.Bytes())
	}
}

// TestWriterMatchesEncoderAtEveryWidth: every header and integer width
// boundary is written as msgpack.Encoder writes it.
func TestWriterMatchesEncoderAtEveryWidth(t *testing.T) {
	lens := []int{0, 1, 15, 16, 31, 32, 255, 256, 65535, 65536}
	ints := []int64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
		-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64}
	for _, l := range lens {
		checkWriter(t, strings.Repeat("x", l), int64(l), bytes.Repeat([]byte{7}, l), l)
	}
	for _, n := range ints {
		checkWriter(t, "s", n, nil, int(n&0xffff))
	}
	checkWriter(t, "", 0, []byte{}, 0)
}

// FuzzWriterMatchesEncoder: for any string, integer, bytes and length,
// the writer's bytes are msgpack.Encoder's.
func FuzzWriterMatchesEncoder(f *testing.F) {
	f.Add("k", int64(-40), []byte{1}, uint32(20))
	f.Fuzz(func(t *testing.T, s string, n int64, b []byte, l uint32) {
		checkWriter(t, s, n, b, int(l))
	})
}

// checkJSONValue: JSONValue writes v as msgpack.Marshal does. Maps of
// more than one entry are written in Go's iteration order, which differs
// between two encodes, so such encodings are compared by length and by
// the value they decode to.
func checkJSONValue(t *testing.T, v any) {
	t.Helper()
	got, ok := AppendJSONValue(v)
	if !ok {
		t.Fatalf("%#v: left to reflection", v)
	}
	want, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	var g, w any
	if len(got) != len(want) || msgpack.Unmarshal(got, &g) != nil || msgpack.Unmarshal(want, &w) != nil || !reflect.DeepEqual(g, w) {
		t.Fatalf("%#v:\n writer  %x\n Marshal %x", v, got, want)
	}
}

// TestJSONValueMatchesMarshalForEveryShape: every shape encoding/json
// produces, at the header widths, is written as msgpack.Marshal writes
// it; another type is left to reflection with nothing written.
func TestJSONValueMatchesMarshalForEveryShape(t *testing.T) {
	big := map[string]any{}
	for i := range 20 {
		big[strings.Repeat("k", i)] = float64(i)
	}
	for _, v := range []any{nil, true, false, 1.5, math.Inf(-1), "", strings.Repeat("s", 300), []any{}, []any(nil),
		map[string]any{}, map[string]any(nil), map[string]any{"ok": true}, []any{nil, "a", []any{2.0}, map[string]any{"x": nil}},
		make([]any, 20), big, map[string]any{"n": map[string]any{"m": []any{map[string]any{}}}}} {
		checkJSONValue(t, v)
	}
	w := Get()
	defer Put(w)
	w.MapLen(1)
	for _, v := range []any{1, int64(1), []string{"a"}, map[string]string{}, []any{1}, map[string]any{"a": []any{true, 1}}} {
		if w.JSONValue(v) {
			t.Fatalf("%#v: written by hand", v)
		}
	}
	if b, _ := w.Bytes(); !bytes.Equal(b, []byte{0x81}) {
		t.Fatalf("a value left to reflection left bytes behind: %x", b)
	}
}

// FuzzJSONValueMatchesMarshal: for any JSON document, JSONValue writes
// what msgpack.Marshal writes of its decoded value.
func FuzzJSONValueMatchesMarshal(f *testing.F) {
	f.Add([]byte(`{"ok":true,"n":[1,2.5,"x",null,{"a":{}}]}`))
	f.Add([]byte(`"s"`))
	f.Fuzz(func(t *testing.T, doc []byte) {
		var v any
		if json.Unmarshal(doc, &v) != nil {
			return
		}
		checkJSONValue(t, v)
	})
}
