package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"
)

// errJSONText is wrapped by every refusal of checkJSONText.
var errJSONText = errors.New("the body is not exact JSON")

// checkJSONText refuses the JSON texts that encoding/json would read as
// something else than they say, so that two different bodies are never
// one call: bytes that are not UTF-8 and escapes of lone surrogates (both
// read as U+FFFD: \ud800 and \udfff, or the bytes 0xFF and 0xFE, would be
// one argument), and an object that names a member twice ({"a":1,"a":2}
// would be read as {"a":2}). RFC 8259 leaves these to the reader; an
// idempotency key's arguments must have one meaning. Its cost is linear
// in len(b).
func checkJSONText(b []byte) error {
	if !utf8.Valid(b) {
		i := invalidUTF8At(b)
		return fmt.Errorf("%w: byte 0x%02x at offset %d is not UTF-8 (JSON text is UTF-8)", errJSONText, b[i], i)
	}
	if err := checkSurrogates(b); err != nil {
		return err
	}
	return checkMembers(b)
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return 0
}

// checkSurrogates finds \u escapes of surrogates in b's strings that do
// not make a pair: a high one (D800-DBFF) not followed by a low one
// (DC00-DFFF), or a low one alone.
func checkSurrogates(b []byte) error {
	in := false
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			in = !in
		case !in || c != '\\':
		case i+1 < len(b) && b[i+1] != 'u':
			i++ // a one-character escape
		default:
			n, err := surrogateEscape(b, i)
			if err != nil {
				return err
			}
			i += n - 1
		}
	}
	return nil
}

// surrogateEscape reads the \u escape at b[i:] and returns its length (12
// for a surrogate pair), or refuses a lone surrogate.
func surrogateEscape(b []byte, i int) (int, error) {
	u, ok := hex4(b, i)
	switch {
	case !ok || u < 0xd800 || u > 0xdfff:
		return 6, nil // not a surrogate (or malformed: the decoder says so)
	case u <= 0xdbff:
		if lo, ok := hex4(b, i+6); ok && lo >= 0xdc00 && lo <= 0xdfff {
			return 12, nil
		}
	}
	return 0, fmt.Errorf("%w: \\u%04x at offset %d is a lone surrogate, not a character (JSON text is UTF-8)", errJSONText, u, i)
}

// hex4 reads \uXXXX at b[i:].
func hex4(b []byte, i int) (uint64, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	u, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 32)
	return u, err == nil
}

// checkMembers refuses an object, at any depth, that names a member twice
// (by the member's name as read: "a" and "\u0061" are one name). A body
// that is not JSON is left to the decoder's own error.
func checkMembers(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var stack []map[string]bool // one per open object; nil for an open array
	expectKey := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil // the decoder reports it
		}
		switch t := tok.(type) {
		case json.Delim:
			stack, expectKey = openOrClose(stack, t)
			continue
		case string:
			if expectKey {
				top := stack[len(stack)-1]
				if top[t] {
					return fmt.Errorf("%w: the member %s is named twice in one object", errJSONText, strconv.Quote(clipName(t)))
				}
				top[t] = true
				expectKey = false
				continue
			}
		}
		expectKey = len(stack) > 0 && stack[len(stack)-1] != nil // a value ends: a key may follow
	}
}

// openOrClose tracks the open objects and arrays; it returns whether a
// member's name comes next.
func openOrClose(stack []map[string]bool, d json.Delim) ([]map[string]bool, bool) {
	switch d {
	case '{':
		return append(stack, map[string]bool{}), true
	case '[':
		return append(stack, nil), false
	}
	stack = stack[:len(stack)-1]
	return stack, len(stack) > 0 && stack[len(stack)-1] != nil
}

func clipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
