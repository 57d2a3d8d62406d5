package wire_test

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/wire"
)

func TestParseNumber(t *testing.T) {
	cases := []struct {
		in   string
		want any // nil: refused
	}{
		{"0", int64(0)},
		{"-0", int64(0)},
		{"-0.0e5", int64(0)},
		{"120", int64(120)},
		{"120.0", int64(120)},
		{"1.2e2", int64(120)},
		{"12000e-2", int64(120)},
		{"9007199254740993", int64(9007199254740993)},
		{"9007199254740993.0", int64(9007199254740993)}, // not ...992: no float in between
		{"9223372036854775807", int64(math.MaxInt64)},
		{"9223372036854775808", uint64(1 << 63)},
		{"-9223372036854775808", int64(math.MinInt64)},
		{"-9223372036854775809", nil},
		{"18446744073709551615", uint64(math.MaxUint64)},
		{"18446744073709551616", nil},      // 2^64, an integer as written, beyond 64 bits (a float names it)
		{"18446744073709551616.0", 0x1p64}, // written as a float, it is one
		{"18446744073709551617", nil},      // 2^64+1: no float names it either
		{"1.8446744073709552e19", 0x1p64},
		{"1e20", 1e20},
		{"0.1", 0.1},
		{"-2.5", -2.5},
		{"0.1000000000000000055511151231257827021181583404541015625", 0.1}, // float64(0.1) exactly
		{"0.10000000000000001", nil},                                       // rounds to 0.1: another value
		{"9007199254740993.5", nil},
		{"1e308", 1e308},
		{"1e309", nil},
		{"1e999999", nil},
		{"1e-400", nil},
		{"5e-324", 5e-324},
		{"1" + strings.Repeat("0", 900), nil},
		{"1." + strings.Repeat("0", 5000) + "e1", int64(10)},
		{"0." + strings.Repeat("0", 4009) + "1e40100", nil},
		{"1e2097153", nil},
		{"01", nil},
		{"1.", nil},
		{"+1", nil},
		{"1e", nil},
		{"", nil},
	}
	for _, c := range cases {
		got, err := wire.ParseNumber(c.in)
		if c.want == nil {
			if err == nil || !errors.Is(err, wire.ErrNumber) {
				t.Errorf("ParseNumber(%.40s) = %v, %v; want ErrNumber", c.in, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseNumber(%.40s) = %v (%T), %v; want %v (%T)", c.in, got, got, err, c.want, c.want)
		}
	}
}

// TestParseNumberReadsWhatEncodersWrite: every float64 and every integer
// of the wire's range, written as JSON encoders write them (a float's
// shortest form), reads back as the value CanonicalArgs gives it. An
// integral float in the integer range is written out in full: its
// shortest form names another integer (7.057679871203174e+16 is
// 70576798712031740, the float 70576798712031744), and the text is the
// value.
func TestParseNumberReadsWhatEncodersWrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	for range 20000 {
		f := math.Float64frombits(rng.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			continue
		}
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if f == math.Trunc(f) && f >= -0x1p63 && f < 0x1p64 {
			s = strconv.FormatFloat(f, 'f', 0, 64)
		}
		got, err := wire.ParseNumber(s)
		if err != nil {
			t.Fatalf("ParseNumber(%s): %v", s, err)
		}
		norm, _, _ := wire.CanonicalArgs(map[string]any{"f": f})
		if got != norm["f"] && !(f == 0 && got == int64(0)) {
			t.Fatalf("ParseNumber(%s) = %v (%T); canonical %v (%T)", s, got, got, norm["f"], norm["f"])
		}
		i := int64(rng.Uint64())
		if got, err := wire.ParseNumber(strconv.FormatInt(i, 10)); err != nil || got != i {
			t.Fatalf("ParseNumber(%d) = %v, %v", i, got, err)
		}
	}
}

func FuzzParseNumber(f *testing.F) {
	for _, s := range []string{"0", "1e999999", "18446744073709551617", "0.1", "-9223372036854775808", "1.5e-323"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := wire.ParseNumber(s)
		if err != nil {
			return
		}
		// What is accepted is one value, and reads back as itself.
		var again string
		switch x := v.(type) {
		case int64:
			again = strconv.FormatInt(x, 10)
		case uint64:
			if x <= math.MaxInt64 {
				t.Fatalf("%q: uint64 %d fits int64", s, x)
			}
			again = strconv.FormatUint(x, 10)
		case float64:
			if x == math.Trunc(x) && x >= -0x1p63 && x < 0x1p64 {
				t.Fatalf("%q: the integral float %v in the integer range", s, x)
			}
			again = strconv.FormatFloat(x, 'g', -1, 64)
		default:
			t.Fatalf("%q: %T", s, v)
		}
		if w, err := wire.ParseNumber(again); err != nil || w != v {
			t.Fatalf("%q -> %v -> %q -> %v, %v", s, v, again, w, err)
		}
	})
}
