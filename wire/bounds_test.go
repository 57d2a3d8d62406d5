package wire_test

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

func TestCheckHeadersBounds(t *testing.T) {
	w3c := "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if len(w3c) != wire.MaxTraceparentBytes {
		t.Fatalf("a W3C traceparent is %d bytes, the bound is %d", len(w3c), wire.MaxTraceparentBytes)
	}
	cases := []struct {
		name, tp, ts string
		reject       bool
	}{
		{"w3c traceparent", w3c, "", false},
		{"traceparent one byte over", w3c + "x", "", true},
		{"tracestate at its bound", w3c, strings.Repeat("a", wire.MaxTracestateBytes), false},
		{"tracestate one byte over", w3c, strings.Repeat("a", wire.MaxTracestateBytes+1), true},
	}
	for _, c := range cases {
		rej := wire.CheckHeaders(c.tp, c.ts)
		if (rej != nil) != c.reject || (rej != nil && rej.Reason != codes.ReasonOversized) {
			t.Errorf("%s: %v", c.name, rej)
		}
	}
}

// TestDeadLetterKeepsABoundedPrefix: a dead letter keeps at
// most MaxDeadLetterPrefix bytes of the value, with its length and SHA-256.
func TestDeadLetterKeepsABoundedPrefix(t *testing.T) {
	for _, n := range []int{0, 10, wire.MaxDeadLetterPrefix, wire.MaxDeadLetterPrefix + 1, 3 << 20} {
		v := bytes.Repeat([]byte{7}, n)
		var d wire.DeadLetter
		wire.DeadLetterValue(&d, v)
		sum := sha256.Sum256(v)
		if len(d.Value) != min(n, wire.MaxDeadLetterPrefix) || d.ValueLen != n || !bytes.Equal(d.ValueSHA256, sum[:]) ||
			d.ValueTruncated != (n > wire.MaxDeadLetterPrefix) {
			t.Errorf("%d bytes: kept %d, len %d, truncated %v", n, len(d.Value), d.ValueLen, d.ValueTruncated)
		}
		b, err := wire.EncodeDeadLetter(&d)
		if err != nil || len(b) > wire.MaxDeadLetterPrefix+256 {
			t.Errorf("%d bytes: dead letter of %d bytes (%v)", n, len(b), err)
		}
	}
}
