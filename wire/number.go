package wire

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ErrNumber is wrapped by every refusal of ParseNumber.
var ErrNumber = errors.New("wire: number cannot be carried exactly")

// Bounds of a number read from JSON text, checked in one linear scan
// before anything computes with the value. Why: a number's cost in an
// arbitrary-precision library grows with its exponent (1e999999, 9
// bytes, cost about 51 ms of CPU in the schema validator), so a body of
// such numbers would cost minutes. No number the wire can carry needs
// more: the exact decimal expansion of a 64-bit float has at most 767
// significant digits, and its magnitude lies within 10^-324 and 10^309.
const (
	maxNumberDigits = 800
	maxNumberExp    = 400
	// maxExponentLiteral bounds the exponent as written, before the
	// digits' own position is counted in: a body is at most 1 MiB.
	maxExponentLiteral = 1 << 21
)

// ParseNumber reads one JSON number (RFC 8259's grammar, as a
// json.Number holds it) as the value the wire carries, exactly or not at
// all:
//
//   - a number whose value is an integer in [-2^63, 2^64) is that integer,
//     however it is written (120, 120.0, 1.2e2): int64, or uint64 above
//     math.MaxInt64;
//   - an integer written as one (digits alone, no fraction or exponent)
//     outside that range is refused: the wire has no integer to carry it,
//     and a tool reading the float that names it would read another
//     integer (36893488147419103232 is 2^65, a float, which an encoder
//     writes 36893488147419103000). Send such a number as a string;
//   - any other number is a 64-bit float, when one names it: its value is
//     the float's exact value or the float's shortest decimal form (0.1,
//     1.8446744073709552e19, what JSON encoders write for a float);
//   - anything else is refused (ErrNumber): a fraction that would round to
//     a float of another value (0.1000000000000000001), and numbers out of
//     a float's range.
//
// So two numbers that are accepted and differ are never one value on the
// wire, and the value a tool receives is the value that was checked. Its
// cost is linear in len(s).
func ParseNumber(s string) (any, error) {
	d, err := scanDecimal(s)
	if err != nil {
		return nil, err
	}
	if d.digits == "" {
		return int64(0), nil
	}
	if v, ok := d.integer(); ok {
		return v, nil
	}
	if !strings.ContainsAny(s, ".eE") {
		return nil, fmt.Errorf("%w: %s is an integer beyond 64 bits (the wire carries integers in [-2^63, 2^64) exactly); send it as a string",
			ErrNumber, clip(s))
	}
	return d.float(s)
}

// decimal is a number's value, ±digits × 10^exp, with digits free of
// leading and trailing zeros ("" for zero).
type decimal struct {
	neg    bool
	digits string
	exp    int
}

// magnitude is the count of digits before the decimal point of |value|
// (negative or zero when |value| < 1): the value lies in
// [10^(m-1), 10^m).
func (d decimal) magnitude() int { return len(d.digits) + d.exp }

func scanDecimal(s string) (decimal, error) {
	var d decimal
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[intStart:i]
	if intPart == "" || len(intPart) > 1 && intPart[0] == '0' {
		return d, fmt.Errorf("%w: %q is not a JSON number", ErrNumber, clip(s))
	}
	var frac string
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		if frac = s[fs:i]; frac == "" {
			return d, fmt.Errorf("%w: %q is not a JSON number", ErrNumber, clip(s))
		}
	}
	exp, i, err := scanExponent(s, i)
	if err != nil {
		return d, err
	}
	if i != len(s) {
		return d, fmt.Errorf("%w: %q is not a JSON number", ErrNumber, clip(s))
	}
	return normalDecimal(d.neg, intPart, frac, exp, s)
}

// scanExponent reads an optional exponent from s[i:]. One written with
// more than maxExponentLiteral is refused as it is read: no number the
// wire carries needs it, however many zeros its digits hold.
func scanExponent(s string, i int) (int, int, error) {
	if i >= len(s) || s[i] != 'e' && s[i] != 'E' {
		return 0, i, nil
	}
	i++
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	start, exp := i, 0
	for i < len(s) && isDigit(s[i]) {
		if exp = exp*10 + int(s[i]-'0'); exp > maxExponentLiteral {
			return 0, i, fmt.Errorf("%w: %s is out of the range of a 64-bit float", ErrNumber, clip(s))
		}
		i++
	}
	if i == start {
		return 0, i, fmt.Errorf("%w: %q is not a JSON number", ErrNumber, clip(s))
	}
	if neg {
		exp = -exp
	}
	return exp, i, nil
}

func normalDecimal(neg bool, intPart, frac string, exp int, s string) (decimal, error) {
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	d := decimal{neg: neg, digits: trimmed, exp: exp}
	if d.digits == "" {
		return d, nil
	}
	switch m := d.magnitude(); {
	case len(d.digits) > maxNumberDigits:
		return d, fmt.Errorf("%w: %s has more than %d significant digits", ErrNumber, clip(s), maxNumberDigits)
	case m > maxNumberExp || m < -maxNumberExp:
		return d, fmt.Errorf("%w: %s is out of the range of a 64-bit float", ErrNumber, clip(s))
	}
	return d, nil
}

// integer returns the value as int64 or uint64 when it is an integer in
// [-2^63, 2^64).
func (d decimal) integer() (any, bool) {
	if d.exp < 0 || d.magnitude() > 20 {
		return nil, false
	}
	u, err := strconv.ParseUint(d.digits+strings.Repeat("0", d.exp), 10, 64)
	switch {
	case err != nil:
		return nil, false
	case !d.neg && u <= math.MaxInt64:
		return int64(u), true
	case !d.neg:
		return u, true
	case u <= 1<<63:
		return int64(-u), true // two's complement: -(1<<63) is MinInt64
	}
	return nil, false
}

// float returns the 64-bit float that names d, or refuses d.
func (d decimal) float(s string) (any, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%w: %s is out of the range of a 64-bit float", ErrNumber, clip(s))
	}
	if d.equalsFloat(f, -1) || d.equalsFloat(f, maxNumberDigits) {
		return f, nil
	}
	return nil, fmt.Errorf("%w: %s is neither an integer in [-2^63, 2^64) nor a 64-bit float (the nearest is %s)",
		ErrNumber, clip(s), strconv.FormatFloat(f, 'g', -1, 64))
}

// equalsFloat reports whether d is the value of f written with prec
// significant digits (-1: the shortest form that reads back as f;
// maxNumberDigits: f's exact value, which has at most 767).
func (d decimal) equalsFloat(f float64, prec int) bool {
	fd, err := scanDecimal(strconv.FormatFloat(f, 'e', prec, 64))
	return err == nil && fd == d
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
