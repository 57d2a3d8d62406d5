package wire

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// ErrKey is wrapped by every refusal of CheckKey.
var ErrKey = errors.New("wire: invalid idempotency key")

// The grammar of an idempotency key, one for every way in (Kafka, the
// gateway's HTTP header and path, MCP, the clients; docs/wire-format.md,
// "Keys"). Why each rule:
//   - 1 to MaxKeyBytes bytes of valid UTF-8: the key is part of the
//     routing key and of every record of the key;
//   - no control character (C0, DEL, C1) and no bidirectional formatting
//     character: a key is shown to people (logs, history, the console),
//     where these hide or reorder text, so two keys that print alike
//     would be two keys;
//   - no white space at either end: a header's value loses it, so the
//     same key sent over HTTP and Kafka would be two keys;
//   - not "." or "..": an HTTP path cleans them away.
//
// Keys are compared as bytes: the NFC and NFD forms of one text are two
// keys (no normalisation, which would tie the key to a Unicode version).

// CheckKey returns nil when k is a valid idempotency key, else why not.
func CheckKey(k string) error {
	switch {
	case k == "":
		return fmt.Errorf("%w: the key is empty", ErrKey)
	case len(k) > MaxKeyBytes:
		return fmt.Errorf("%w: the key is %d bytes, the limit is %d", ErrKey, len(k), MaxKeyBytes)
	case !utf8.ValidString(k):
		return fmt.Errorf("%w: the key is not valid UTF-8", ErrKey)
	case k == "." || k == "..":
		return fmt.Errorf("%w: the key may not be %q", ErrKey, k)
	}
	for i, r := range k {
		if r < 0x20 || r >= 0x7f && r <= 0x9f || bidiControl(r) {
			return fmt.Errorf("%w: the key holds the control character %U at byte %d", ErrKey, r, i)
		}
	}
	first, _ := utf8.DecodeRuneInString(k)
	last, _ := utf8.DecodeLastRuneInString(k)
	if keySpace(first) || keySpace(last) {
		return fmt.Errorf("%w: the key begins or ends with white space", ErrKey)
	}
	return nil
}

// bidiControl: the characters of Unicode's Bidi_Control property.
func bidiControl(r rune) bool {
	return r == 0x061c || r == 0x200e || r == 0x200f || r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// keySpace: the space separators (Unicode category Zs) and the line and
// paragraph separators, listed so that every client implements the same
// set whatever its Unicode tables.
func keySpace(r rune) bool {
	switch {
	case r == 0x20, r == 0xa0, r == 0x1680, r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029,
		r == 0x202f, r == 0x205f, r == 0x3000:
		return true
	}
	return false
}
