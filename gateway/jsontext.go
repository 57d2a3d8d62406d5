package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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
// idempotency key's arguments must have one meaning. One pass over b,
// allocating only for objects of many members and names with escapes;
// what is not JSON at all is left to the decoder's own error.
func checkJSONText(b []byte) error {
	if !utf8.Valid(b) {
		i := invalidUTF8At(b)
		return fmt.Errorf("%w: byte 0x%02x at offset %d is not UTF-8 (JSON text is UTF-8)", errJSONText, b[i], i)
	}
	sc := textScanner{b: b}
	return sc.run()
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

// textScanner walks a JSON text's structure: the open objects and arrays,
// and each object's member names.
type textScanner struct {
	b      []byte
	frames []frame
}

// frame is an open object (names) or array.
type frame struct {
	object    bool
	expectKey bool     // the next string is a member's name
	names     []string // the names so far; few in most objects
	set       map[string]bool
}

// manyNames is where a frame's names move from a slice to a map.
const manyNames = 16

func (sc *textScanner) run() error {
	for i := 0; i < len(sc.b); i++ {
		switch sc.b[i] {
		case '{':
			sc.frames = append(sc.frames, frame{object: true, expectKey: true})
		case '[':
			sc.frames = append(sc.frames, frame{})
		case '}', ']':
			if len(sc.frames) > 0 {
				sc.frames = sc.frames[:len(sc.frames)-1]
			}
		case ',':
			if f := sc.top(); f != nil && f.object {
				f.expectKey = true
			}
		case '"':
			end, err := sc.str(i)
			if err != nil || end < 0 {
				return err // an unterminated string: the decoder says so
			}
			if f := sc.top(); f != nil && f.object && f.expectKey {
				f.expectKey = false
				if err := f.add(sc.b[i : end+1]); err != nil {
					return err
				}
			}
			i = end
		}
	}
	return nil
}

func (sc *textScanner) top() *frame {
	if len(sc.frames) == 0 {
		return nil
	}
	return &sc.frames[len(sc.frames)-1]
}

// str finds the end of the string that opens at b[i] (its closing
// quote's offset, or -1 when the text ends first), refusing an escape of
// a lone surrogate on the way.
func (sc *textScanner) str(i int) (int, error) {
	b := sc.b
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '"':
			return j, nil
		case '\\':
			if j+1 < len(b) && b[j+1] == 'u' {
				n, err := surrogateEscape(b, j)
				if err != nil {
					return 0, err
				}
				j += n - 1
			} else {
				j++
			}
		}
	}
	return -1, nil
}

// add records a member's name (quoted, as written), refusing one named
// before in the object: by the name as read, so "a" and "\u0061" are one.
func (f *frame) add(quoted []byte) error {
	name := string(quoted[1 : len(quoted)-1])
	if bytes.IndexByte(quoted, '\\') >= 0 {
		if err := json.Unmarshal(quoted, &name); err != nil {
			return nil // not a JSON string: the decoder says so
		}
	}
	if f.has(name) {
		return fmt.Errorf("%w: the member %s is named twice in one object", errJSONText, strconv.Quote(clipName(name)))
	}
	if f.set != nil {
		f.set[name] = true
		return nil
	}
	f.names = append(f.names, name)
	if len(f.names) > manyNames {
		f.set = make(map[string]bool, 2*manyNames)
		for _, n := range f.names {
			f.set[n] = true
		}
		f.names = nil
	}
	return nil
}

func (f *frame) has(name string) bool {
	if f.set != nil {
		return f.set[name]
	}
	for _, n := range f.names {
		if n == name {
			return true
		}
	}
	return false
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
	var u uint64
	for _, c := range b[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			u = u<<4 | uint64(c-'0')
		case c >= 'a' && c <= 'f':
			u = u<<4 | uint64(c-'a'+10)
		case c >= 'A' && c <= 'F':
			u = u<<4 | uint64(c-'A'+10)
		default:
			return 0, false
		}
	}
	return u, true
}

func clipName(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
