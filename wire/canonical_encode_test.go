package wire

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/internal/msgpack/mpwrite"
)

// checkCanonicalEncode: the hand-written canonical bytes of args are the
// reflective encoder's.
func checkCanonicalEncode(t testing.TB, args map[string]any) {
	t.Helper()
	norm, got, err := CanonicalArgs(args)
	if err != nil {
		return // refused before either encoder runs
	}
	want, err := canonicalByReflection(norm)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%#v:\n hand-written %x\n reflective   %x", args, got, want)
	}
	w := mpwrite.Get()
	defer mpwrite.Put(w)
	if !w.Canonical(norm) {
		t.Fatalf("%#v: normalised args left to reflection", args)
	}
}

// TestCanonicalEncodeMatchesReflectionForEveryKind: every kind a
// normalised value holds, at every integer and header width, and maps
// with more keys than the sort's stack array, encode as the reflective
// canonical encoder does.
func TestCanonicalEncodeMatchesReflectionForEveryKind(t *testing.T) {
	many := map[string]any{}
	for i := range 40 {
		many[strings.Repeat("k", 40-i)] = map[string]any{"z": i, "a": []any{i}}
	}
	for _, args := range []map[string]any{
		nil, {}, many,
		{"n": 1, "neg": -1, "i8": -100, "u8": 200, "i16": -30000, "u16": 60000, "i32": -2e9, "u32": 4e9, "i64": int64(math.MinInt64),
			"u64": uint64(math.MaxUint64), "f": 1.5, "fint": 120.0, "s": "", "long": strings.Repeat("x", 70000), "b": []byte{},
			"bnil": []byte(nil), "nil": nil, "t": true, "f0": false, "a": []any{}, "a2": []any{nil, []any{map[string]any{"b": 1, "a": 2}}},
			"m": map[string]any{"y": map[string]any{}, "x": []byte{1}}, "f32": float32(0.25), "u": uint(7), "i": int8(-3)},
		{"deep": map[any]any{"k": []any{map[any]any{"j": 1}}}},
	} {
		checkCanonicalEncode(t, args)
	}
}

// FuzzCanonicalEncodeMatchesReflection: for any args a message decodes
// to, the hand-written canonical bytes are the reflective encoder's.
func FuzzCanonicalEncodeMatchesReflection(f *testing.F) {
	f.Add([]byte{0x82, 0xa1, 'b', 0x01, 0xa1, 'a', 0x92, 0xcb, 0x40, 0x5e, 0, 0, 0, 0, 0, 0, 0xc4, 0x01, 0x07})
	f.Add([]byte{0x81, 0xa1, 'a', 0x81, 0xa1, 'c', 0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || !mpread.IsMapCode(b[0]) || mpread.CheckShape(b, maxNesting) != nil {
			return
		}
		var args map[string]any
		if unmarshal(b, &args) != nil {
			return
		}
		checkCanonicalEncode(t, args)
	})
}
