package gateway

import (
	"errors"
	"strings"
	"testing"
)

func TestParseIdempotencyKey(t *testing.T) {
	good := map[string]string{
		`order-42`:               "order-42",
		`"order-42"`:             "order-42",
		`"a b"`:                  "a b",
		`"say \"hi\" \\ "`:       `say "hi" \ `,
		`  run-7/step-3  `:       "run-7/step-3",
		strings.Repeat("k", 256): strings.Repeat("k", 256),
	}
	for in, want := range good {
		got, err := parseIdempotencyKey([]string{in})
		if err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
	}
	bad := []string{``, `""`, `"open`, `"a"b`, `"\n"`, `"\x"`, `a b`, `a"b`, `a\b`, "caf\u00e9", "tab\there", strings.Repeat("k", 257)}
	for _, in := range bad {
		if got, err := parseIdempotencyKey([]string{in}); !errors.Is(err, ErrIdempotencyKey) {
			t.Errorf("%q: got %q, %v; want an error", in, got, err)
		}
	}
	if _, err := parseIdempotencyKey([]string{"a", "b"}); !errors.Is(err, ErrIdempotencyKey) {
		t.Error("two header lines must be refused")
	}
	if k, err := parseIdempotencyKey(nil); k != "" || err != nil {
		t.Errorf("absent: %q %v", k, err)
	}
}
