package main

import (
	"fmt"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/wire"
)

// jsonable converts msgpack-decoded values (maps with interface keys, raw
// messages) into values encoding/json can print.
func jsonable(v any) any {
	switch x := v.(type) {
	case *wire.Result:
		c := *x
		c.Result = jsonable(x.Result)
		return &c
	case msgpack.RawMessage:
		var d any
		if msgpack.Unmarshal(x, &d) != nil {
			return nil
		}
		return jsonable(d)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonable(e)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = jsonable(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonable(e)
		}
		return out
	}
	return v
}
