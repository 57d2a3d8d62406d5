// Package jsonview turns what the executor stores as msgpack (results,
// events) into values encoding/json prints: the command line's output and
// the operator console's pages.
package jsonview

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/mpread"
	"github.com/atmostonce/toolexec/wire"
)

// Value converts msgpack-decoded values (maps with interface keys, raw
// messages) into values encoding/json can print.
func Value(v any) any {
	switch x := v.(type) {
	case *wire.Result:
		c := *x
		c.Result = Value(x.Result)
		return &c
	case msgpack.RawMessage:
		var d any
		if mpread.Unmarshal(x, &d) != nil {
			return nil
		}
		return Value(d)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Value(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = Value(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Value(e)
		}
		return out
	}
	return v
}
