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
//   - no control character (C0, DEL, C1), no invisible character (the
//     default-ignorable code points: zero-width spaces and joiners, the
//     bidirectional and other format controls, variation selectors, the
//     byte order mark, tags) and no separator but the ASCII space (the
//     other space separators, U+2028 and U+2029): a key is shown to
//     people (logs, history, the console), where these hide, reorder or
//     look like other text, so two keys that print alike would be two
//     keys;
//   - no space at either end: a header's value loses it, so the same key
//     sent over HTTP and Kafka would be two keys;
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
		switch {
		case r < 0x20 || r >= 0x7f && r <= 0x9f:
			return fmt.Errorf("%w: the key holds the control character %U at byte %d", ErrKey, r, i)
		case invisible(r):
			return fmt.Errorf("%w: the key holds the invisible character %U at byte %d", ErrKey, r, i)
		case r != ' ' && keySpace(r):
			return fmt.Errorf("%w: the key holds the separator %U at byte %d (only the ASCII space may separate)", ErrKey, r, i)
		}
	}
	if k[0] == ' ' || k[len(k)-1] == ' ' {
		return fmt.Errorf("%w: the key begins or ends with white space", ErrKey)
	}
	return nil
}

// invisible: Unicode's Default_Ignorable_Code_Point characters (which
// include the Bidi_Control ones), listed so that every client implements
// the same set whatever its Unicode tables: text shows nothing for them.
func invisible(r rune) bool {
	switch {
	case r == 0x00ad, r == 0x034f, r == 0x061c, r == 0x115f, r == 0x1160, r == 0x17b4, r == 0x17b5,
		r >= 0x180b && r <= 0x180f, r >= 0x200b && r <= 0x200f, r >= 0x202a && r <= 0x202e,
		r >= 0x2060 && r <= 0x206f, r == 0x3164, r >= 0xfe00 && r <= 0xfe0f, r == 0xfeff, r == 0xffa0,
		r >= 0xfff0 && r <= 0xfff8, r >= 0x1bca0 && r <= 0x1bca3, r >= 0x1d173 && r <= 0x1d17a,
		r >= 0xe0000 && r <= 0xe0fff:
		return true
	}
	return false
}

// keySpace: the space separators (Unicode category Zs) and the line and
// paragraph separators, listed so that every client implements the same
// set whatever its Unicode tables. Only U+0020 may be in a key, and not
// at either end.
func keySpace(r rune) bool {
	switch {
	case r == 0x20, r == 0xa0, r == 0x1680, r >= 0x2000 && r <= 0x200a, r == 0x2028, r == 0x2029,
		r == 0x202f, r == 0x205f, r == 0x3000:
		return true
	}
	return false
}
