package wire

import (
	"bytes"
	"math"
	"testing"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/vmihailenco/msgpack/v5"
)

// stable encodes v with sorted map keys: two decoded values compare byte
// for byte, NaN included, and the encoding tells apart what equality must
// (nil from empty, int8 from int16, float32 from float64, str from bin).
func stable(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.SetSortMapKeys(true)
	if err := e.Encode(v); err != nil {
		t.Fatalf("stable encode of %#v: %v", v, err)
	}
	return buf.Bytes()
}

// checkIntentDecode: where the hand-written decoder reads value, the
// reflective decoder reads it too, to an equal intent. It reports whether
// the hand-written one read it.
func checkIntentDecode(t testing.TB, value []byte) bool {
	t.Helper()
	got, ok := decodeIntentFast(value)
	if !ok {
		return false
	}
	var want Intent
	if err := unmarshal(value, &want); err != nil {
		t.Fatalf("%x: hand-written decoder read %+v, reflective failed: %v", value, got, err)
	}
	if g, w := stable(t, got), stable(t, &want); !bytes.Equal(g, w) {
		t.Fatalf("%x:\n hand-written %+v\n reflective   %+v", value, got, want)
	}
	return true
}

func marshalT(t testing.TB, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIntentDecodeMatchesReflectionForEveryField: an intent with every
// field set, args of every kind, nils where a field allows them, and the
// integer widths, decode by hand to the reflective decoder's values.
func TestIntentDecodeMatchesReflectionForEveryField(t *testing.T) {
	args := map[string]any{"i": 1, "neg": -40, "u16": 300, "i32": -70000, "u64": uint64(math.MaxUint64), "f32": float32(0.5),
		"f": 1.25, "nan": math.NaN(), "s": "x", "empty": "", "b": []byte{1}, "b0": []byte{}, "nil": nil, "t": true,
		"a": []any{}, "a2": []any{1, "y", []any{nil}}, "m": map[string]any{}, "m2": map[string]any{"k": map[string]any{"z": 2}}}
	full := map[string]any{"v": 1, "type": "resolve", "id": "i-1", "tenant": "acme", "key": "k", "tool": "pay", "args": args,
		"reply_to": "r", "deadline_ms": int64(1) << 40, "scope": map[string]any{"run_id": "run", "thread_id": "th", "extra": []any{1}},
		"outcome": "failed", "result": map[string]any{"ok": []any{1.5}}, "error": map[string]any{"code": "c", "message": "m", "x": 1},
		"by": "ops", "reason": "why", "call_id": "c-1", "force": true, "unknown": map[string]any{"deep": []any{nil, "q"}}}
	cases := []map[string]any{
		full,
		{},
		{"v": nil, "type": nil, "args": nil, "scope": nil, "error": nil, "result": nil, "force": nil, "deadline_ms": nil},
		{"args": map[string]any{}, "scope": map[string]any{}, "error": map[string]any{}, "result": "s", "force": false},
		{"v": -1, "deadline_ms": uint64(math.MaxUint64), "result": []byte{}},
		{"v": int64(math.MinInt64), "deadline_ms": int32(-5), "result": int8(-3)},
	}
	for _, c := range cases {
		if !checkIntentDecode(t, marshalT(t, c)) {
			t.Fatalf("%#v: left to reflection", c)
		}
	}
	// The struct itself, as EncodeIntent writes it.
	in := &Intent{V: 1, Type: "call", ID: "a", Key: "k", Tool: "t", Args: args, Scope: &Scope{RunID: "r"}, Error: &ErrorInfo{Code: "c"}, Force: true}
	b, err := EncodeIntent(in)
	if err != nil {
		t.Fatal(err)
	}
	if !checkIntentDecode(t, b) {
		t.Fatal("EncodeIntent's output left to reflection")
	}
}

// TestIntentDecodeLeavesOddFormsToReflection: forms whose reflective
// result is not plain are not read by hand, so DecodeIntent's answer to
// them (value, or rejection and reason) is the reflective one.
func TestIntentDecodeLeavesOddFormsToReflection(t *testing.T) {
	for name, b := range map[string][]byte{
		"repeated field":   {0x82, 0xa1, 'v', 0x01, 0xa1, 'v', 0x01},
		"repeated result":  {0x82, 0xa6, 'r', 'e', 's', 'u', 'l', 't', 0x01, 0xa6, 'r', 'e', 's', 'u', 'l', 't', 0x02},
		"bin key":          {0x81, 0xc4, 0x01, 'v', 0x01},
		"bin string":       {0x81, 0xa2, 'i', 'd', 0xc4, 0x01, 'x'},
		"float v":          {0x81, 0xa1, 'v', 0xcb, 0x3f, 0xf0, 0, 0, 0, 0, 0, 0},
		"string v":         {0x81, 0xa1, 'v', 0xa1, '1'},
		"ext in args":      {0x81, 0xa4, 'a', 'r', 'g', 's', 0x81, 0xa1, 'a', 0xd4, 0x01, 0x00},
		"int key in args":  {0x81, 0xa4, 'a', 'r', 'g', 's', 0x81, 0x01, 0x02},
		"scope as array":   {0x81, 0xa5, 's', 'c', 'o', 'p', 'e', 0x92, 0xa1, 'r', 0xa1, 't'},
		"force as int":     {0x81, 0xa5, 'f', 'o', 'r', 'c', 'e', 0x01},
		"args as ext map":  {0x81, 0xa4, 'a', 'r', 'g', 's', 0xd4, 0x01, 0x80},
		"nil key":          {0x81, 0xc0, 0x01},
		"timestamp result": {0x81, 0xa6, 'r', 'e', 's', 'u', 'l', 't', 0xd6, 0xff, 0, 0, 0, 1},
	} {
		if checkIntentDecode(t, b) {
			t.Errorf("%s (%x): read by hand", name, b)
		}
	}
}

// FuzzIntentDecodeMatchesReflection: for any message DecodeIntent would
// decode, the hand-written decoder either leaves it to reflection or
// reads exactly the reflective decoder's intent.
func FuzzIntentDecodeMatchesReflection(f *testing.F) {
	f.Add(marshalT(f, map[string]any{"v": 1, "type": "call", "id": "i", "tenant": "t", "key": "k", "tool": "x",
		"args": map[string]any{"a": []any{1, "b", nil, 2.5, map[string]any{"c": []byte{1}}}}, "scope": map[string]any{"run_id": "r"}}))
	f.Add(marshalT(f, map[string]any{"type": "resolve", "outcome": "failed", "error": map[string]any{"code": "x"}, "result": []any{1.5}, "force": true}))
	f.Add([]byte{0x82, 0xa1, 'v', 0x01, 0xa1, 'v', 0x02})
	f.Add([]byte{0x81, 0xa4, 'a', 'r', 'g', 's', 0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, value []byte) {
		if len(value) == 0 || !mpread.IsMapCode(value[0]) || mpread.CheckShape(value, maxNesting) != nil {
			return // decodeIntentBytes refuses it before either decoder runs
		}
		checkIntentDecode(t, value)
	})
}
