package mpread

import (
	"errors"
	"runtime"
	"testing"
)

// allocated is how many bytes f allocated.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestUnmarshalRefusesAHeaderThatDeclaresMoreThanItHolds(t *testing.T) {
	huge := []byte{0xdf, 0x00, 0x10, 0x00, 0x00} // a map32 of 1Mi entries, in 5 bytes
	var v any
	var err error
	if n := allocated(func() { err = Unmarshal(huge, &v) }); n > 1<<20 {
		t.Fatalf("decoding 5 bytes allocated %d bytes", n)
	}
	if !errors.Is(err, ErrShape) {
		t.Fatalf("err = %v, want ErrShape", err)
	}
	if err := Unmarshal([]byte{0x81, 0xa1, 'a', 0x01}, &v); err != nil || v.(map[string]any)["a"] != int8(1) {
		t.Fatalf("a good map: %v, %#v", err, v)
	}
}
