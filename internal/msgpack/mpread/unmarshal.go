package mpread

import "github.com/vmihailenco/msgpack/v5"

// MaxDepth bounds the nesting of the values Unmarshal decodes: the wire's
// own bound (64) with room to spare for what wraps it.
const MaxDepth = 100

// Unmarshal is msgpack.Unmarshal behind CheckShape (at most MaxDepth
// deep): the one way to decode by reflection bytes this process did not
// just write (a record read from a topic, a value read from the store, a
// raw message inside either), so that a header declaring more elements
// than bytes remain is refused instead of preallocated. A Go target with
// map-typed fields must also refuse ExtUnder's extensions first.
func Unmarshal(b []byte, v any) error {
	if err := CheckShape(b, MaxDepth); err != nil {
		return err
	}
	return msgpack.Unmarshal(b, v)
}
