package executor

import (
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/wire"
)

// checkDecodeArgs: decodeArgs returns what msgpack.Unmarshal into a
// map[string]any returns, error or value (NaN compared by its form).
func checkDecodeArgs(t *testing.T, b []byte) {
	t.Helper()
	got, gerr := decodeArgs(b)
	var want map[string]any
	werr := msgpack.Unmarshal(b, &want)
	if len(b) == 0 {
		want, werr = map[string]any{}, nil
	}
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("%x: decodeArgs err %v, reflective err %v", b, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) && fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", want) {
		t.Fatalf("%x:\n decodeArgs %#v\n reflective %#v", b, got, want)
	}
}

// TestDecodeArgsMatchesReflectionForEveryKind: canonical args of every
// kind, and forms left to reflection, decode as msgpack.Unmarshal does.
func TestDecodeArgsMatchesReflectionForEveryKind(t *testing.T) {
	args := map[string]any{"i": 1, "neg": -40, "u16": 300, "f": 1.25, "big": math.MaxInt64, "s": "x", "b": []byte{1},
		"nil": nil, "t": true, "a": []any{1, "y", []any{}}, "m": map[string]any{"k": map[string]any{}}}
	_, canon, err := wire.CanonicalArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{canon, nil, {0x80}, {0xc0}, {0x81, 0x01, 0x02}, {0x81, 0xa1, 'a', 0xd4, 0x01, 0x00}, {0x91, 0x01}, {0xa1, 'x'}} {
		checkDecodeArgs(t, b)
	}
	r := mpread.New(canon)
	if _, ok := r.Map(); !ok {
		t.Fatal("canonical args left to reflection")
	}
}

// FuzzDecodeArgsMatchesReflection: for any bytes whose declared lengths
// fit them, decodeArgs agrees with msgpack.Unmarshal.
func FuzzDecodeArgsMatchesReflection(f *testing.F) {
	f.Add([]byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'b', 0x92, 0xc3, 0xa1, 'c'})
	f.Add([]byte{0x81, 0xa1, 'a', 0xd4, 0x01, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := mpread.New(b)
		if len(b) > 0 && !r.Skip() {
			return // reflection would preallocate from a declared length
		}
		if len(b) > 0 && mpread.IsExtCode(b[0]) {
			return // refused before reflection (TestDecodeArgsRefusesAnExtension)
		}
		checkDecodeArgs(t, b)
	})
}

// TestToolResultEncodesAsMarshal: a tool's result is stored as
// msgpack.Marshal encodes it, by hand for a JSON-shaped one and by
// reflection for another.
func TestToolResultEncodesAsMarshal(t *testing.T) {
	type custom struct{ N int }
	for _, v := range []any{map[string]any{"ok": true}, []any{1.5, "x", nil}, "s", custom{N: 3}, 7} {
		got, err := encodeToolResult(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%#v: %x, Marshal %x", v, got, want)
		}
	}
}

// TestDecodeArgsRefusesAnExtension: stored arguments that are an
// extension, which msgpack would read as a map whose header is the
// extension's payload (a map32 of 2^31 entries here: a fatal out of
// memory), are refused before reflection.
func TestDecodeArgsRefusesAnExtension(t *testing.T) {
	for _, b := range [][]byte{[]byte("\xc7\x05\x30\xdf\x7f\xff\xff\xff"), []byte("\xd5\x30\xdf\x0a\x0a\x1a\x1a")} {
		if m, err := decodeArgs(b); err == nil {
			t.Fatalf("%x: decoded %v, want an error", b, m)
		}
	}
}
