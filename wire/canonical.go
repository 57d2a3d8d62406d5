package wire

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/internal/msgpack/mpwrite"
)

// ErrArgs is wrapped by every argument canonicalisation error.
var ErrArgs = errors.New("wire: invalid args")

// maxArgsDepth bounds recursion so a hostile message cannot exhaust the stack.
const maxArgsDepth = 32

// CanonicalArgs normalises args so that two encodings of the same JSON-like
// value compare equal: map keys are sorted, and a float with an integral
// value (120.0) becomes the integer (120). It returns the normalised value
// (safe to send as JSON) and its canonical msgpack bytes.
//
// Only JSON-like values are accepted: maps with string keys, arrays,
// strings, numbers, booleans, nil and binary. Anything else is an error
// wrapping ErrArgs, because the duplicate rules must not depend on a
// client's encoder.
func CanonicalArgs(args map[string]any) (norm map[string]any, enc []byte, err error) {
	if args == nil {
		args = map[string]any{}
	}
	v, err := normalise(args, 0)
	if err != nil {
		return nil, nil, err
	}
	norm = v.(map[string]any)
	// Written by hand, byte for byte the reflective canonical
	// encoding (FuzzCanonicalEncodeMatchesReflection): the bytes are
	// hashed, so a change would make a retry look like a conflict.
	w := mpwrite.Get()
	defer mpwrite.Put(w)
	if w.Canonical(norm) {
		b, err := w.Bytes()
		return norm, b, err
	}
	b, err := canonicalByReflection(norm)
	if err != nil {
		return nil, nil, err
	}
	return norm, b, nil
}

// canonicalByReflection is the canonical encoding by msgpack.Encoder:
// sorted map keys, integers in their shortest form.
func canonicalByReflection(norm map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	e.SetSortMapKeys(true)
	e.UseCompactInts(true)
	if err := e.Encode(norm); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrArgs, err)
	}
	return buf.Bytes(), nil
}

// ArgsHash is the SHA-256 of canonical argument bytes.
func ArgsHash(canonical []byte) []byte {
	h := sha256.Sum256(canonical)
	return h[:]
}

func normalise(v any, depth int) (any, error) {
	if depth > maxArgsDepth {
		return nil, fmt.Errorf("%w: nested deeper than %d", ErrArgs, maxArgsDepth)
	}
	switch x := v.(type) {
	case nil, bool, string, []byte:
		return x, nil
	case map[string]any:
		return normaliseMap(x, depth)
	case map[any]any:
		return normaliseAnyMap(x, depth)
	case []any:
		return normaliseSlice(x, depth)
	default:
		return normaliseNumber(v)
	}
}

func normaliseMap(m map[string]any, depth int) (any, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		nv, err := normalise(v, depth+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
		out[k] = nv
	}
	return out, nil
}

func normaliseAnyMap(m map[any]any, depth int) (any, error) {
	out := make(map[string]any, len(m))
	for k, v := range m {
		ks, ok := k.(string)
		if !ok {
			return nil, fmt.Errorf("%w: map key %v is %T, not a string", ErrArgs, k, k)
		}
		nv, err := normalise(v, depth+1)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ks, err)
		}
		out[ks] = nv
	}
	return out, nil
}

func normaliseSlice(s []any, depth int) (any, error) {
	out := make([]any, len(s))
	for i, v := range s {
		nv, err := normalise(v, depth+1)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		out[i] = nv
	}
	return out, nil
}

// normaliseNumber maps every numeric type to int64, uint64 (only above
// MaxInt64) or float64, and integral floats to integers.
func normaliseNumber(v any) (any, error) {
	switch x := v.(type) {
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case int:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), nil
		}
		return x, nil
	case uint:
		return normaliseNumber(uint64(x))
	case float32:
		return normaliseFloat(float64(x))
	case float64:
		return normaliseFloat(x)
	}
	return nil, fmt.Errorf("%w: unsupported value of type %T", ErrArgs, v)
}

func normaliseFloat(f float64) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%w: NaN or infinite number", ErrArgs)
	}
	// An integral float is the integer of the same value, exactly as
	// normaliseNumber maps integers: int64 in [-2^63, 2^63), uint64 in
	// [2^63, 2^64).
	if f == math.Trunc(f) {
		switch {
		case f >= -0x1p63 && f < 0x1p63:
			return int64(f), nil
		case f >= 0x1p63 && f < 0x1p64:
			return uint64(f), nil
		}
	}
	return f, nil
}

// DecodeCanonicalArgs decodes stored canonical arguments (an event's or a
// record's) into the map a tool's request is built from, as
// msgpack.Unmarshal into a map[string]any does: by hand when it can, by
// reflection for the forms the hand-written reader leaves to it (an ext
// value, a key that is not a str). Empty bytes are no arguments. What is
// not a map is refused before reflection sees it: vmihailenco/msgpack reads
// an extension's payload as a map header (mpread.ExtUnder), so stored bytes
// that are corrupt must not become a fatal out of memory.
func DecodeCanonicalArgs(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return map[string]any{}, nil
	}
	r := mpread.New(b)
	if m, ok := r.Map(); ok {
		return m, nil
	}
	if !mpread.IsMapCode(b[0]) && b[0] != 0xc0 {
		return nil, fmt.Errorf("wire: canonical args: not a msgpack map (code 0x%x)", b[0])
	}
	if err := mpread.CheckShape(b, maxNesting); err != nil {
		return nil, fmt.Errorf("wire: canonical args: %w", err)
	}
	var m map[string]any
	if err := unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("wire: canonical args: %w", err)
	}
	return m, nil
}
