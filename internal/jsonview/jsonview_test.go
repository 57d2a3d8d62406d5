package jsonview

import (
	"runtime"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// A raw message inside a stored value is foreign bytes too: its shape is
// checked before the reflective decoder preallocates what its header
// declares.
func TestValueRefusesARawMessageThatDeclaresMoreThanItHolds(t *testing.T) {
	huge := msgpack.RawMessage{0xdf, 0x00, 0x10, 0x00, 0x00} // a map32 of 1Mi entries, in 5 bytes
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	v := Value(huge)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("converting 5 bytes allocated %d bytes", n)
	}
	if v != nil {
		t.Fatalf("Value = %#v, want nil", v)
	}
	if v := Value(msgpack.RawMessage{0x81, 0xa1, 'a', 0x01}); v.(map[string]any)["a"] != int8(1) {
		t.Fatalf("a good raw message: %#v", v)
	}
}
