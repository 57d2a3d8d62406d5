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

// downstream_key, which makes a resolve a member's fact about one attempt,
// is read, bounded, a string, and only on a resolve that names its call.
func TestDecodeIntentDownstreamKey(t *testing.T) {
	rk := []byte("acme/k-1")
	fact := map[string]any{"type": "resolve", "outcome": "succeeded", "call_id": "intent-0", "downstream_key": "tk2_ab"}
	in, rej := wire.DecodeIntent(codecMarshal(t, codecWith(fact)), rk, wire.FromControl)
	if rej != nil || in.DownstreamKey != "tk2_ab" {
		t.Fatalf("downstream_key not read: %+v, %+v", in, rej)
	}
	for name, fields := range map[string]map[string]any{
		"too long":     {"type": "resolve", "outcome": "succeeded", "call_id": "intent-0", "downstream_key": strings.Repeat("d", wire.MaxIDBytes+1)},
		"not a string": {"type": "resolve", "outcome": "succeeded", "call_id": "intent-0", "downstream_key": 7},
		"no call_id":   {"type": "resolve", "outcome": "succeeded", "downstream_key": "tk2_ab"},
		"a compensate": {"type": "compensate", "call_id": "intent-0", "downstream_key": "tk2_ab"},
	} {
		if _, rej := wire.DecodeIntent(codecMarshal(t, codecWith(fields)), rk, wire.FromControl); rej == nil || rej.Reason != codes.ReasonInvalidField || !strings.Contains(rej.Detail, "downstream_key") {
			t.Errorf("%s: %+v", name, rej)
		}
	}
}
