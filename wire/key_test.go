package wire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/wire"
)

func TestCheckKey(t *testing.T) {
	ok := []string{"a", "order-42", "a b", "a/b", "ключ", "caf\u00e9", "cafe\u0301", "\U0001F600", "...", ".a",
		strings.Repeat("k", wire.MaxKeyBytes), strings.Repeat("é", wire.MaxKeyBytes/2)}
	for _, k := range ok {
		if err := wire.CheckKey(k); err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", k, err)
		}
	}
	bad := []string{"", ".", "..", "a\x00b", "a\tb", "a\nb", "a\x7fb", "a\u0085b", "a\u202eb", "\u2066x", "x\u061c",
		" a", "a ", "a\u00a0", "\u3000a", "a\u2028", "\xff", strings.Repeat("k", wire.MaxKeyBytes+1),
		strings.Repeat("é", wire.MaxKeyBytes/2+1),
		// invisible, or a separator that looks like a space or a line break:
		// each would make two keys that print alike
		"x\u200dy", "a\u200bb", "a\u2028b", "a\u2029b", "a\u00a0b", "a\u3000b", "a\u00adb", "a\ufeffb", "a\ufe0fb", "a\U000e0041b", "\u2060a"}
	for _, k := range bad {
		if err := wire.CheckKey(k); !errors.Is(err, wire.ErrKey) {
			t.Errorf("CheckKey(%q) = %v, want ErrKey", k, err)
		}
	}
}

// TestKafkaIntentKeysFollowTheGrammar: the executor refuses on Kafka what
// the gateway refuses, so that no key exists by one way in that another
// cannot name.
func TestKafkaIntentKeysFollowTheGrammar(t *testing.T) {
	for _, k := range []string{"a\x00", "a\u202e", "a ", ".."} {
		b, err := wire.EncodeIntent(&wire.Intent{Type: wire.TypeCall, ID: "i", Key: k, Tool: "t", ReplyTo: "r"})
		if err != nil {
			t.Fatal(err)
		}
		_, rej := wire.DecodeIntent(b, []byte(wire.RoutingKey(wire.DefaultTenant, k)), wire.FromIntents)
		if rej == nil || rej.Reason != "invalid_field" || rej.ID != "i" || rej.ReplyTo != "r" {
			t.Errorf("key %q: %+v, want an answerable invalid_field", k, rej)
		}
	}
}

func TestValidTraceparent(t *testing.T) {
	good := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	if !wire.ValidTraceparent(good) {
		t.Fatalf("%s refused", good)
	}
	for _, tp := range []string{"", "garbage", strings.ToUpper(good), "01" + good[2:], good + "-x",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7_01", "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01"} {
		if wire.ValidTraceparent(tp) {
			t.Errorf("%q accepted", tp)
		}
	}
}
