package wire

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// What the wire carries goes out as JSON (to an HTTP tool, in the
// gateway's answers) exactly: integers as themselves, and floats as text
// whose value is the float's own and that no reader takes for an
// integer. encoding/json writes a float of an integral value below 1e21
// as digits alone (2^65 as 36893488147419103000), which a reader of
// arbitrary-precision integers (Python's json, a BigInt parser) takes
// for another integer; such a float, one of magnitude 2^53 or more, is
// written instead as its exact value in exponent form
// (3.6893488147419103232e+19).

// minAmbiguousFloat is 2^53: from it on every float is an integer, and
// not every integer is a float.
const minAmbiguousFloat = 1 << 53

// JSONFloat returns f as JSON text when encoding/json's would be taken
// for another integer (see above), and false when encoding/json's is
// exact (f is not integral, or below 2^53, or at 1e21 and above, where it
// writes an exponent). f must be finite.
func JSONFloat(f float64) (json.Number, bool) {
	if a := math.Abs(f); a < minAmbiguousFloat || a >= 1e21 || f != math.Trunc(f) {
		return "", false
	}
	digits := new(big.Float).SetFloat64(math.Abs(f)).Text('f', 0) // exact: f is an integer
	sign := ""
	if f < 0 {
		sign = "-"
	}
	mant := strings.TrimRight(digits[1:], "0")
	if mant == "" {
		mant = "0"
	}
	return json.Number(sign + digits[:1] + "." + mant + "e+" + strconv.Itoa(len(digits)-1)), true
}

// maxJSONDepth bounds ForJSON's recursion: arguments are at most 32 deep
// (maxArgsDepth), results as a tool wrote them.
const maxJSONDepth = 100

// ForJSON returns v (a value the wire carries: maps, slices, strings,
// numbers, booleans, nil) with every float that JSONFloat writes in its
// own form replaced by that form, for encoding/json. It copies only the
// maps and slices on the way to such a float; v is not changed.
func ForJSON(v any) any {
	out, _ := forJSON(v, 0)
	return out
}

func forJSON(v any, depth int) (any, bool) {
	if depth > maxJSONDepth {
		return v, false
	}
	switch x := v.(type) {
	case float64:
		if n, ok := JSONFloat(x); ok {
			return n, true
		}
	case map[string]any:
		return forJSONMap(x, depth)
	case []any:
		return forJSONSlice(x, depth)
	}
	return v, false
}

func forJSONMap(m map[string]any, depth int) (any, bool) {
	var out map[string]any
	for k, e := range m {
		if c, changed := forJSON(e, depth+1); changed {
			if out == nil {
				out = make(map[string]any, len(m))
				for k2, e2 := range m {
					out[k2] = e2
				}
			}
			out[k] = c
		}
	}
	if out == nil {
		return m, false
	}
	return out, true
}

func forJSONSlice(s []any, depth int) (any, bool) {
	var out []any
	for i, e := range s {
		if c, changed := forJSON(e, depth+1); changed {
			if out == nil {
				out = append([]any(nil), s...)
			}
			out[i] = c
		}
	}
	if out == nil {
		return s, false
	}
	return out, true
}
