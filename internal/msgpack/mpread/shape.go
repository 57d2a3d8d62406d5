package mpread

import (
	"errors"
	"fmt"
)

// ErrShape is CheckShape's refusal.
var ErrShape = errors.New("bad msgpack shape")

// CheckShape walks the msgpack value in b without decoding it. It refuses
// what would make the decoder allocate far more than len(b) or recurse
// without bound: a map or array that declares more elements than bytes
// remain, or nesting deeper than maxDepth. vmihailenco/msgpack v5
// preallocates a map[string]any of the declared length with no limit
// (Decoder.DecodeMap) and a []any of up to 1e6 elements per header, so
// without this walk a 5-byte map32 header is a fatal out-of-memory.
// Strings, binaries and extensions are skipped as opaque payloads. Every
// reflective decode of bytes this process did not just write itself (the
// wire's messages, the event log, the store's records) runs it first.
func CheckShape(b []byte, maxDepth int) error {
	open := []uint64{1} // values still to read, per open container
	i := 0
	for len(open) > 0 {
		top := len(open) - 1
		if open[top] == 0 {
			open = open[:top]
			continue
		}
		open[top]--
		if i >= len(b) {
			return fmt.Errorf("%w: truncated at byte %d", ErrShape, i)
		}
		c := b[i]
		i++
		var n, size uint64
		w, extra, container := 0, uint64(0), false
		switch {
		case c <= 0x7f, c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		case c <= 0x8f:
			n, container = 2*uint64(c&0x0f), true
		case c <= 0x9f:
			n, container = uint64(c&0x0f), true
		case c <= 0xbf:
			size = uint64(c & 0x1f)
		case c == 0xc4, c == 0xd9:
			w = 1
		case c == 0xc5, c == 0xda:
			w = 2
		case c == 0xc6, c == 0xdb:
			w = 4
		case c == 0xc7:
			w, extra = 1, 1
		case c == 0xc8:
			w, extra = 2, 1
		case c == 0xc9:
			w, extra = 4, 1
		case c == 0xcc, c == 0xd0:
			size = 1
		case c == 0xcd, c == 0xd1:
			size = 2
		case c == 0xca, c == 0xce, c == 0xd2:
			size = 4
		case c == 0xcb, c == 0xcf, c == 0xd3:
			size = 8
		case c >= 0xd4 && c <= 0xd8:
			size = 1 + 1<<(c-0xd4)
		case c == 0xdc:
			w, container = 2, true
		case c == 0xdd:
			w, container = 4, true
		case c == 0xde, c == 0xdf:
			w, container = 2<<(c-0xde), true
		default: // 0xc1 is never used
			return fmt.Errorf("%w: invalid code 0x%x at byte %d", ErrShape, c, i-1)
		}
		if w > 0 {
			if len(b)-i < w {
				return fmt.Errorf("%w: truncated at byte %d", ErrShape, i)
			}
			var l uint64
			for _, x := range b[i : i+w] {
				l = l<<8 | uint64(x)
			}
			i += w
			if !container {
				size = l + extra
			} else if n = l; c >= 0xde {
				n *= 2
			}
		}
		rest := uint64(len(b) - i)
		if container {
			if n > rest {
				return fmt.Errorf("%w: a container at byte %d declares %d elements but %d bytes remain", ErrShape, i, n, rest)
			}
			if len(open) > maxDepth {
				return fmt.Errorf("%w: nested deeper than %d", ErrShape, maxDepth)
			}
			open = append(open, n)
			continue
		}
		if size > rest {
			return fmt.Errorf("%w: a value at byte %d declares %d bytes but %d remain", ErrShape, i, size, rest)
		}
		i += int(size)
	}
	return nil
}

// IsMapCode reports whether c starts a msgpack map.
func IsMapCode(c byte) bool { return c&0xf0 == 0x80 || c == 0xde || c == 0xdf }

// IsExtCode reports whether c starts a msgpack extension value.
func IsExtCode(c byte) bool { return c == 0xc7 || c == 0xc8 || c == 0xc9 || (c >= 0xd4 && c <= 0xd8) }

// ExtUnder reports whether the map in b holds an extension value under
// key. vmihailenco/msgpack decodes a map-typed Go field from an extension
// by skipping the extension's header and reading its payload as the map's
// header (Decoder.DecodeMapLen), with no bound: CheckShape, which treats an
// extension as an opaque payload, cannot see that header, so a 5-byte
// extension would be a fatal out of memory. A caller that decodes a
// map-typed field by reflection refuses such a value first.
func ExtUnder(b []byte, key string) bool {
	r := New(b)
	n, ok := r.MapLen()
	if !ok {
		return false
	}
	for range n {
		k, ok := r.Key()
		if !ok && !r.Skip() { // a key that is not a str
			return false
		}
		if c, ok := r.peek(); ok && string(k) == key && IsExtCode(c) {
			return true
		}
		if !r.Skip() {
			return false
		}
	}
	return false
}
