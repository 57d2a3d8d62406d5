package wire_test

import (
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// call_id, the precondition of a command, is read, bounded, and must be a
// string.
func TestDecodeIntentCallID(t *testing.T) {
	rk := []byte("acme/k-1")
	ok := codecMarshal(t, codecWith(map[string]any{"type": "compensate", "call_id": "intent-0"}))
	in, rej := wire.DecodeIntent(ok, rk, wire.FromControl)
	if rej != nil || in.CallID != "intent-0" {
		t.Fatalf("call_id not read: %+v, %+v", in, rej)
	}
	long := codecMarshal(t, codecWith(map[string]any{"type": "compensate", "call_id": strings.Repeat("c", wire.MaxIDBytes+1)}))
	if _, rej := wire.DecodeIntent(long, rk, wire.FromControl); rej == nil || rej.Reason != codes.ReasonInvalidField || !strings.Contains(rej.Detail, "call_id") {
		t.Fatalf("a call_id over %d bytes: %+v", wire.MaxIDBytes, rej)
	}
	wrong := codecMarshal(t, codecWith(map[string]any{"type": "resolve", "outcome": "succeeded", "call_id": 7}))
	if _, rej := wire.DecodeIntent(wrong, rk, wire.FromControl); rej == nil || rej.Reason != codes.ReasonInvalidField || !strings.Contains(rej.Detail, "call_id") {
		t.Fatalf("a call_id that is not a string: %+v", rej)
	}
}
