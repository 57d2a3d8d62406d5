package wire

import (
	"testing"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/vmihailenco/msgpack/v5"
)

// The per-intent codec work of harness/cmd/bench's load, by hand and by
// reflection (docs/PERFORMANCE.md). Run with
// go test ./topics -run '^$' -bench 'Intent|Result' -benchmem.

func benchIntent(b *testing.B) []byte {
	in := &Intent{V: Version, Type: TypeCall, ID: "u-123456", Tenant: "bench", Key: "k-123456", Tool: "bench.noop", Args: map[string]any{"n": 123456}}
	v, err := EncodeIntent(in)
	if err != nil {
		b.Fatal(err)
	}
	return v
}

func BenchmarkDecodeIntentByHand(b *testing.B) {
	v := benchIntent(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, rej := decodeIntentBytes(v); rej != nil {
			b.Fatal(rej)
		}
	}
}

func BenchmarkDecodeIntentByReflection(b *testing.B) {
	v := benchIntent(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := mpread.CheckShape(v, maxNesting); err != nil {
			b.Fatal(err)
		}
		var in Intent
		if err := unmarshal(v, &in); err != nil {
			b.Fatal(err)
		}
	}
}

func benchResult() *Result {
	return &Result{V: Version, IntentID: "u-123456", Type: TypeCall, Tenant: "bench", Key: "k-123456", Tool: "bench.noop",
		Status: codes.StatusSucceeded, Result: msgpack.RawMessage{0x81, 0xa2, 'o', 'k', 0xc3}, WasReplay: true,
		OriginalIntentID: "u-123455", OriginalCalledAt: 1764660000000, CompletedAt: 1764660000001, Attempt: 1}
}

func BenchmarkEncodeResultByHand(b *testing.B) {
	r := benchResult()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := EncodeResult(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeResultByReflection(b *testing.B) {
	r := benchResult()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := msgpack.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonicalArgs(b *testing.B) {
	args := map[string]any{"n": uint32(123456)}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := CanonicalArgs(args); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonicalArgsByReflection(b *testing.B) {
	args := map[string]any{"n": uint32(123456)}
	b.ReportAllocs()
	for b.Loop() {
		v, err := normalise(args, 0)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := canonicalByReflection(v.(map[string]any)); err != nil {
			b.Fatal(err)
		}
	}
}
