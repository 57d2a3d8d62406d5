package wire

import (
	"encoding/json"
	"math"
	"math/big"
	"testing"
)

// A float whose encoding/json text would read as another integer is
// written as its exact value in exponent form; every other float keeps
// encoding/json's text, which is exact.
func TestJSONFloat(t *testing.T) {
	for f, want := range map[float64]string{
		math.Ldexp(1, 65):  "3.6893488147419103232e+19",
		-math.Ldexp(1, 65): "-3.6893488147419103232e+19",
		1e20:               "1.0e+20",
		math.Ldexp(1, 53):  "9.007199254740992e+15",
	} {
		n, ok := JSONFloat(f)
		if !ok || string(n) != want {
			t.Errorf("%g: %q %v, want %q", f, n, ok, want)
			continue
		}
		exact, _, err := big.ParseFloat(string(n), 10, 1000, big.ToNearestEven)
		if err != nil || exact.Cmp(new(big.Float).SetFloat64(f)) != 0 {
			t.Errorf("%g: %s is not its exact value", f, n)
		}
	}
	for _, f := range []float64{0.1, 1e21, 1e300, 123.5, 9007199254740991} {
		if n, ok := JSONFloat(f); ok {
			t.Errorf("%g: written as %s; encoding/json's text is exact", f, n)
		}
	}
}

// ForJSON replaces such floats at any depth and changes nothing else, nor
// its argument.
func TestForJSON(t *testing.T) {
	big65 := math.Ldexp(1, 65)
	in := map[string]any{"a": big65, "b": []any{int64(1), big65, "x"}, "c": map[string]any{"d": 0.5}}
	out, err := json.Marshal(ForJSON(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":3.6893488147419103232e+19,"b":[1,3.6893488147419103232e+19,"x"],"c":{"d":0.5}}`
	if string(out) != want {
		t.Fatalf("%s\nwant %s", out, want)
	}
	if in["a"] != big65 || in["b"].([]any)[1] != big65 {
		t.Fatal("ForJSON changed its argument")
	}
}

// An integer written as one beyond 64 bits is refused, even when a float
// names it; written as a float, it is one.
func TestParseNumberRefusesIntegersBeyond64Bits(t *testing.T) {
	for _, s := range []string{"36893488147419103232", "-9223372036854775809", "18446744073709551616"} {
		if v, err := ParseNumber(s); err == nil {
			t.Errorf("%s: accepted as %T %v", s, v, v)
		}
	}
	for s, want := range map[string]any{"3.6893488147419103232e19": math.Ldexp(1, 65), "36893488147419103232.0": math.Ldexp(1, 65),
		"18446744073709551615": uint64(math.MaxUint64), "-9223372036854775808": int64(math.MinInt64)} {
		if v, err := ParseNumber(s); err != nil || v != want {
			t.Errorf("%s: %T %v %v, want %T %v", s, v, v, err, want, want)
		}
	}
}
