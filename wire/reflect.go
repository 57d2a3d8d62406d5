package wire

import (
	"fmt"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/vmihailenco/msgpack/v5"
)

// The reflective msgpack codec: the fallback of the planned codecs
// (codec.go) and the codec of the records they do not plan.

// marshal encodes a record of the wire (what names it in an error)
// reflectively.
func marshal(v any, what string) ([]byte, error) {
	b, err := msgpack.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("wire: encode %s: %w", what, err)
	}
	return b, nil
}

// decodeMap decodes a record of the wire's (what names it in an error)
// reflectively, after the checks every reader of the wire makes: a map,
// a shape that cannot make the decoder allocate or recurse without bound,
// and no extension under the keys of mapFields (mpread.ExtUnder says why).
func decodeMap[T any](b []byte, what string, mapFields ...string) (*T, error) {
	if len(b) == 0 || !mpread.IsMapCode(b[0]) {
		return nil, fmt.Errorf("wire: decode %s: not a msgpack map", what)
	}
	if err := mpread.CheckShape(b, maxNesting); err != nil {
		return nil, fmt.Errorf("wire: decode %s: %w", what, err)
	}
	for _, f := range mapFields {
		if mpread.ExtUnder(b, f) {
			return nil, fmt.Errorf("wire: decode %s: %s is a msgpack extension, not a map", what, f)
		}
	}
	var v T
	if err := unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("wire: decode %s: %w", what, err)
	}
	return &v, nil
}

// unmarshal is msgpack.Unmarshal that turns a panic inside the decoder
// into an error. Why: msgpack v5 panics on some malformed input, such as
// a map that repeats a key whose field is an interface (the second value
// is decoded into the first one's unaddressable copy; FuzzDecodeResult and
// TestRepeatedInterfaceKeyIsNotAPanic hold it). Intents, answers and dead
// letters come from the wire: a reader gets an error, and an executor
// never stops on one.
func unmarshal(b []byte, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed msgpack: %v", p)
		}
	}()
	return msgpack.Unmarshal(b, v)
}
