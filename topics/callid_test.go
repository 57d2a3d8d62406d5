package topics_test

import (
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/topics"
)

// call_id, the precondition of a command, is read, bounded, and must be a
// string.
func TestDecodeIntentCallID(t *testing.T) {
	rk := []byte("acme/k-1")
	ok := codecMarshal(t, codecWith(map[string]any{"type": "compensate", "call_id": "intent-0"}))
	in, rej := topics.DecodeIntent(ok, rk, topics.FromControl)
	if rej != nil || in.CallID != "intent-0" {
		t.Fatalf("call_id not read: %+v, %+v", in, rej)
	}
	long := codecMarshal(t, codecWith(map[string]any{"type": "compensate", "call_id": strings.Repeat("c", topics.MaxIDBytes+1)}))
	if _, rej := topics.DecodeIntent(long, rk, topics.FromControl); rej == nil || rej.Reason != topics.ReasonInvalidField || !strings.Contains(rej.Detail, "call_id") {
		t.Fatalf("a call_id over %d bytes: %+v", topics.MaxIDBytes, rej)
	}
	wrong := codecMarshal(t, codecWith(map[string]any{"type": "resolve", "outcome": "succeeded", "call_id": 7}))
	if _, rej := topics.DecodeIntent(wrong, rk, topics.FromControl); rej == nil || rej.Reason != topics.ReasonInvalidField || !strings.Contains(rej.Detail, "call_id") {
		t.Fatalf("a call_id that is not a string: %+v", rej)
	}
}
