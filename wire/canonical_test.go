package wire_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/wire"
)

func canonHash(t testing.TB, args map[string]any) []byte {
	t.Helper()
	_, enc, err := wire.CanonicalArgs(args)
	if err != nil {
		t.Fatalf("CanonicalArgs(%v): %v", args, err)
	}
	return wire.ArgsHash(enc)
}

func TestCanonicalKeyOrder(t *testing.T) {
	// Go map iteration is random: build the same map many times in
	// different insertion orders and compare the canonical bytes.
	keys := []string{"zeta", "alpha", "mid", "Beta", "a", "aa", "", "é"}
	var first []byte
	for i := range 20 {
		m := map[string]any{}
		inner := map[string]any{}
		for j := range keys {
			k := keys[(i+j)%len(keys)]
			m[k] = j
			inner[k] = k
		}
		for j, k := range keys {
			m[k] = j // same values whatever the order of insertion
		}
		m["inner"] = inner
		_, enc, err := wire.CanonicalArgs(m)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = enc
		} else if !bytes.Equal(first, enc) {
			t.Fatalf("canonical bytes depend on key order:\n%x\n%x", first, enc)
		}
	}
}

func TestCanonicalNumbers(t *testing.T) {
	want := canonHash(t, map[string]any{"n": 120})
	for _, v := range []any{int8(120), int16(120), int32(120), int64(120), int(120), uint8(120), uint16(120), uint32(120), uint64(120), uint(120), float32(120), float64(120), 120.0} {
		if got := canonHash(t, map[string]any{"n": v}); !bytes.Equal(got, want) {
			t.Errorf("%T(120) hashes differently from 120", v)
		}
	}
	for _, v := range []any{120.5, float32(120.5), 121, -120, "120", []byte("120"), true} {
		if got := canonHash(t, map[string]any{"n": v}); bytes.Equal(got, want) {
			t.Errorf("%T(%v) hashes like 120", v, v)
		}
	}
	if !bytes.Equal(canonHash(t, map[string]any{"n": 120.5}), canonHash(t, map[string]any{"n": float32(120.5)})) {
		t.Error("float32(120.5) and float64(120.5) differ")
	}
	// Negative zero is zero; large values keep their type.
	if !bytes.Equal(canonHash(t, map[string]any{"n": math.Copysign(0, -1)}), canonHash(t, map[string]any{"n": 0})) {
		t.Error("-0.0 differs from 0")
	}
	if !bytes.Equal(canonHash(t, map[string]any{"n": uint64(math.MaxInt64)}), canonHash(t, map[string]any{"n": int64(math.MaxInt64)})) {
		t.Error("uint64(MaxInt64) differs from int64(MaxInt64)")
	}
	norm, _, err := wire.CanonicalArgs(map[string]any{"big": uint64(math.MaxUint64), "f": 1.25, "i": float32(3)})
	if err != nil {
		t.Fatal(err)
	}
	if norm["big"] != uint64(math.MaxUint64) || norm["f"] != 1.25 || norm["i"] != int64(3) {
		t.Errorf("normalised %#v", norm)
	}
}

// "120 and 120.0 are one number" should hold for every integral float,
// not only up to 9.2e18.
func TestCanonicalLargeIntegralFloats(t *testing.T) {
	pairs := [][2]any{
		{int64(9_210_000_000_000_000_000), float64(9.21e18)},
		{int64(math.MinInt64), float64(math.MinInt64)},
		{uint64(1 << 63), float64(1 << 63)},
		{uint64(18_000_000_000_000_000_000), float64(1.8e19)},
	}
	for _, p := range pairs {
		a := canonHash(t, map[string]any{"n": p[0]})
		b := canonHash(t, map[string]any{"n": p[1]})
		if !bytes.Equal(a, b) {
			t.Errorf("%T %v and %T %v hash differently", p[0], p[0], p[1], p[1])
		}
	}
}

func TestCanonicalNestedAnyKeyMaps(t *testing.T) {
	a := map[string]any{"outer": map[any]any{"b": 1, "a": map[any]any{"x": []any{1.0, "y"}}}}
	b := map[string]any{"outer": map[string]any{"a": map[string]any{"x": []any{int64(1), "y"}}, "b": uint8(1)}}
	if !bytes.Equal(canonHash(t, a), canonHash(t, b)) {
		t.Error("map[any]any with string keys differs from map[string]any")
	}
	norm, _, err := wire.CanonicalArgs(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := norm["outer"].(map[string]any); !ok {
		t.Errorf("nested map normalised to %T, want map[string]any", norm["outer"])
	}
}

func TestCanonicalRejects(t *testing.T) {
	deep := map[string]any{}
	cur := deep
	for range 40 {
		next := map[string]any{}
		cur["d"] = next
		cur = next
	}
	deepArr := []any{}
	for range 40 {
		deepArr = []any{deepArr}
	}
	type custom struct{ A int }
	cases := map[string]map[string]any{
		"int map key":            {"m": map[any]any{1: "x"}},
		"bool map key":           {"m": map[any]any{"ok": 1, true: "x"}},
		"NaN":                    {"n": math.NaN()},
		"float32 NaN":            {"n": float32(math.NaN())},
		"+Inf":                   {"n": math.Inf(1)},
		"-Inf in array":          {"a": []any{1, math.Inf(-1)}},
		"nested maps too deep":   deep,
		"nested arrays too deep": {"a": deepArr},
		"struct value":           {"s": custom{A: 1}},
		"typed slice":            {"s": []string{"a"}},
		"map[string]string":      {"s": map[string]string{"a": "b"}},
		"complex":                {"c": complex(1, 2)},
	}
	for name, args := range cases {
		_, _, err := wire.CanonicalArgs(args)
		if !errors.Is(err, wire.ErrArgs) {
			t.Errorf("%s: err %v, want ErrArgs", name, err)
		}
	}
}

func TestCanonicalDepthBoundary(t *testing.T) {
	nest := func(n int) map[string]any {
		root := map[string]any{}
		cur := root
		for range n {
			next := map[string]any{}
			cur["d"] = next
			cur = next
		}
		return root
	}
	// The args map itself is depth 0; 32 nested maps below it are allowed.
	if _, _, err := wire.CanonicalArgs(nest(32)); err != nil {
		t.Errorf("depth 32: %v", err)
	}
	if _, _, err := wire.CanonicalArgs(nest(33)); !errors.Is(err, wire.ErrArgs) {
		t.Errorf("depth 33: %v", err)
	}
}

func TestCanonicalArraysKeepOrder(t *testing.T) {
	a := canonHash(t, map[string]any{"a": []any{1, 2, 3}})
	b := canonHash(t, map[string]any{"a": []any{3, 2, 1}})
	if bytes.Equal(a, b) {
		t.Error("arrays in different order hash equal")
	}
	if !bytes.Equal(a, canonHash(t, map[string]any{"a": []any{1.0, int8(2), uint64(3)}})) {
		t.Error("arrays of equal numbers hash differently")
	}
}

func TestCanonicalNilAndEmpty(t *testing.T) {
	if !bytes.Equal(canonHash(t, nil), canonHash(t, map[string]any{})) {
		t.Error("nil args differ from empty args")
	}
	if bytes.Equal(canonHash(t, map[string]any{"a": nil}), canonHash(t, map[string]any{})) {
		t.Error(`{"a": nil} hashes like {}`)
	}
	// string and binary are different msgpack types and stay different.
	if bytes.Equal(canonHash(t, map[string]any{"a": "x"}), canonHash(t, map[string]any{"a": []byte("x")})) {
		t.Error("string and binary hash equal")
	}
}

// canonEncodeArgs encodes the logical args
//
//	{"amount": 120, "currency": "EUR", "items": [1, 2.5, "x"], "meta": {"b": 1, "a": [true, nil]}}
//
// in one of several encoder styles, the way clients in other languages do.
func canonEncodeArgs(t *testing.T, style int, amount float64) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	str := func(s string) { must(e.EncodeString(s)) }
	switch style {
	case 0: // default encoder on a Go map (random key order)
		must(e.Encode(map[string]any{"amount": amount, "currency": "EUR", "items": []any{1, 2.5, "x"},
			"meta": map[string]any{"b": 1, "a": []any{true, nil}}}))
	case 1: // full-width ints, compact floats (120.0 becomes an int), sorted keys
		e.UseCompactInts(false)
		e.UseCompactFloats(true)
		e.SetSortMapKeys(true)
		must(e.Encode(map[string]any{"amount": amount, "currency": "EUR", "items": []any{int64(1), 2.5, "x"},
			"meta": map[string]any{"b": int64(1), "a": []any{true, nil}}}))
	case 2: // hand-rolled: reverse key order, float32 numbers, uint64 ints, map16/array16 headers
		must(e.EncodeMapLen(4))
		str("meta")
		buf.Write([]byte{0xde, 0x00, 0x02}) // map16 of 2
		str("a")
		buf.Write([]byte{0xdc, 0x00, 0x02}) // array16 of 2
		must(e.EncodeBool(true))
		must(e.EncodeNil())
		str("b")
		must(e.EncodeUint64(1))
		str("items")
		must(e.EncodeArrayLen(3))
		must(e.EncodeFloat32(1))
		must(e.EncodeFloat32(2.5))
		str("x")
		str("currency")
		buf.Write([]byte{0xd9, 0x03}) // str8 of 3 instead of fixstr
		buf.WriteString("EUR")
		str("amount")
		must(e.EncodeFloat32(float32(amount)))
	case 3: // compact ints, float64 for every number, keys in insertion order written by hand
		e.UseCompactInts(true)
		must(e.EncodeMapLen(4))
		str("currency")
		str("EUR")
		str("amount")
		must(e.EncodeFloat64(amount))
		str("meta")
		must(e.EncodeMapLen(2))
		str("b")
		must(e.EncodeFloat64(1))
		str("a")
		must(e.EncodeArrayLen(2))
		must(e.EncodeBool(true))
		must(e.EncodeNil())
		str("items")
		must(e.EncodeArrayLen(3))
		must(e.EncodeInt8(1))
		must(e.EncodeFloat64(2.5))
		str("x")
	case 4: // map32/array32 headers, int64 written with the widest code
		buf.Write([]byte{0xdf, 0, 0, 0, 4})
		str("items")
		buf.Write([]byte{0xdd, 0, 0, 0, 3})
		buf.Write([]byte{0xd3, 0, 0, 0, 0, 0, 0, 0, 1})
		must(e.EncodeFloat64(2.5))
		str("x")
		str("amount")
		if amount == math.Trunc(amount) {
			buf.WriteByte(0xd3)
			buf.Write(binary.BigEndian.AppendUint64(nil, uint64(int64(amount))))
		} else {
			must(e.EncodeFloat64(amount))
		}
		str("meta")
		buf.Write([]byte{0xdf, 0, 0, 0, 2})
		str("b")
		buf.Write([]byte{0xcf, 0, 0, 0, 0, 0, 0, 0, 1}) // uint64
		str("a")
		buf.Write([]byte{0xdd, 0, 0, 0, 2})
		must(e.EncodeBool(true))
		must(e.EncodeNil())
		str("currency")
		buf.Write([]byte{0xda, 0, 3}) // str16
		buf.WriteString("EUR")
	}
	return buf.Bytes()
}

// canonIntentWithArgs wraps raw args bytes in an intent and decodes it the
// way the executor does.
func canonIntentWithArgs(t *testing.T, args []byte) []byte {
	t.Helper()
	m := codecWith(map[string]any{"args": msgpack.RawMessage(args)})
	in, rej := wire.DecodeIntent(codecMarshal(t, m), []byte("acme/k-1"), wire.FromIntents)
	if rej != nil {
		t.Fatalf("DecodeIntent: %v", rej)
	}
	return canonHash(t, in.Args)
}

func TestCanonicalAcrossEncoders(t *testing.T) {
	const styles = 5
	for _, amount := range []float64{120, 120.5} {
		var want []byte
		for s := range styles {
			raw := canonEncodeArgs(t, s, amount)
			got := canonIntentWithArgs(t, raw)
			if want == nil {
				want = got
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("amount %v: style %d (%x) hashes differently from style 0", amount, s, raw)
			}
		}
	}
	// 120.5 is another number than 120, in every style.
	for s := range styles {
		if bytes.Equal(canonIntentWithArgs(t, canonEncodeArgs(t, s, 120)), canonIntentWithArgs(t, canonEncodeArgs(t, s, 120.5))) {
			t.Errorf("style %d: 120 and 120.5 hash equal", s)
		}
	}
}

func TestArgsHashIsSHA256(t *testing.T) {
	h := wire.ArgsHash(nil)
	// SHA-256 of the empty string.
	const want = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if got := hex.EncodeToString(h); got != want {
		t.Errorf("ArgsHash(nil) = %s", got)
	}
}
