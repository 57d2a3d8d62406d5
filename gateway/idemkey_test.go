package gateway

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParseIdempotencyKey(t *testing.T) {
	good := map[string]string{
		`order-42`:               "order-42",
		`"order-42"`:             "order-42",
		`"a b"`:                  "a b",
		`"say \"hi\" \\ x"`:      `say "hi" \ x`,
		`%"caf%c3%a9"`:           "caf\u00e9",
		`%"a%25b"`:               "a%b",
		`...`:                    "...",
		`  run-7/step-3  `:       "run-7/step-3",
		strings.Repeat("k", 256): strings.Repeat("k", 256),
	}
	for in, want := range good {
		got, err := parseIdempotencyKey([]string{in})
		if err != nil || got != want {
			t.Errorf("%q: got %q, %v; want %q", in, got, err, want)
		}
	}
	bad := []string{``, `""`, `"open`, `"a"b`, `"\n"`, `"\x"`, `a b`, `a"b`, `a\b`, "caf\u00e9", "tab\there", strings.Repeat("k", 257),
		// the wire's grammar: no dot paths, no white space at an end, no
		// control characters, bidi controls or invalid UTF-8 by any form
		`.`, `..`, `"."`, `" a"`, `"a "`, `%"a%00b"`, `%"a%e2%80%aeb"`, `%"%ff"`, `%"caf%C3%A9"`, `%"x%2"`, `%"x"y"`, `%"caf` + "é" + `"`}
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

// Every accepted bare value is the key itself; every accepted value is a
// key the wire can carry.
func TestIdempotencyKeyBareIsVerbatim(t *testing.T) {
	for c := 0; c < 256; c++ {
		v := "a" + string(rune(c)) + "b"
		k, err := parseIdempotencyKey([]string{v})
		if err == nil && k != v {
			t.Fatalf("%q accepted as %q", v, k)
		}
		if err == nil && (c <= 0x20 || c > 0x7e || c == '"' || c == '\\') {
			t.Fatalf("%q accepted", v)
		}
	}
}

// Every valid key of the shared vectors arrives intact in the header form
// the clients send (wire/testdata/client-vectors.json, "keys"); every
// invalid one is refused in any form.
func TestIdempotencyKeyVectors(t *testing.T) {
	raw, err := os.ReadFile("../wire/testdata/client-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Keys []struct {
			KeyHex string `json:"key_hex"`
			Valid  bool   `json:"valid"`
			Header string `json:"header"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || len(v.Keys) < 20 {
		t.Fatalf("%d keys, %v", len(v.Keys), err)
	}
	for _, kv := range v.Keys {
		k, _ := hex.DecodeString(kv.KeyHex)
		if !kv.Valid {
			if _, err := parseIdempotencyKey([]string{`"` + string(k) + `"`}); err == nil {
				t.Errorf("invalid key %q accepted", k)
			}
			continue
		}
		if got, err := parseIdempotencyKey([]string{kv.Header}); err != nil || got != string(k) {
			t.Errorf("%s: %q, %v; want %q", kv.Header, got, err, k)
		}
	}
}
