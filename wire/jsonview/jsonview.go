// Package jsonview turns what the executor stores or answers as msgpack
// (results, events, arguments) into values encoding/json writes: the
// gateway's answers, the command line's output and the operator console's
// pages. It is the one conversion of msgpack-decoded values to JSON.
package jsonview

import (
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/atmostonce/toolexec/wire"
)

// maxDepth bounds the conversion: wire values are at most 64 deep, and a
// value deeper than this becomes nil rather than a deeper recursion.
const maxDepth = 100

// Value converts msgpack-decoded values (raw messages, maps with
// interface keys, NaN and the infinities, which JSON has not) into values
// encoding/json can write, and writes a float that encoding/json would
// write as another integer in its exact form (wire.JSONFloat). A
// *wire.Result is copied with its Result converted. v is not changed.
func Value(v any) any { return valueAt(v, 0) }

func valueAt(v any, depth int) any {
	if depth > maxDepth {
		return nil
	}
	switch x := v.(type) {
	case *wire.Result:
		c := *x
		c.Result = valueAt(x.Result, depth+1)
		return &c
	case msgpack.RawMessage:
		var d any
		if mpread.Unmarshal(x, &d) != nil {
			return nil
		}
		return valueAt(d, depth+1)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = valueAt(e, depth+1)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = valueAt(e, depth+1)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = valueAt(e, depth+1)
		}
		return out
	case float64:
		return float(x, v)
	case float32:
		return float(float64(x), v)
	}
	return v
}

// float is f (whose value v is) as encoding/json may write it: nil for
// NaN and the infinities.
func float(f float64, v any) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	if n, ok := wire.JSONFloat(f); ok {
		return n
	}
	return v
}
