package jsonview

import (
	"bytes"
	"encoding/json"
	"math"
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

// What encoding/json cannot write (NaN, the infinities) becomes null, and
// a float it would write as another integer is written exactly: the
// command line and the console print what the gateway answers.
func TestValueWritesEveryFloatAsJSONCan(t *testing.T) {
	v := Value(map[string]any{"nan": math.NaN(), "inf": float32(math.Inf(1)), "big": 0x1p65, "half": 0.5})
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"big":3.6893488147419103232e+19,"half":0.5,"inf":null,"nan":null}`; string(b) != want {
		t.Fatalf("got %s, want %s", b, want)
	}
}

func TestValueBoundsTheDepth(t *testing.T) {
	var deep any = "leaf"
	for range maxDepth + 10 {
		deep = []any{deep}
	}
	b, err := json.Marshal(Value(deep))
	if err != nil || bytes.Contains(b, []byte("leaf")) {
		t.Fatalf("a value deeper than %d: %v, leaf kept %v", maxDepth, err, bytes.Contains(b, []byte("leaf")))
	}
}
