package mpread

import "math"

// Any reads a value as the reflective decoder's DecodeInterface does:
// nil, bool, int8..int64 and uint8..uint64 by their msgpack width (a
// fixint as int8), float32, float64, string, []byte, []any and
// map[string]any. An ext value, or a map with a key that is not a str, is
// left to the reflective decoder (ok=false).
func (r *Reader) Any() (any, bool) {
	c, ok := r.peek()
	if !ok {
		return nil, false
	}
	switch {
	case c <= 0x7f || c >= 0xe0:
		r.i++
		return int8(c), true
	case c <= 0x8f, c == 0xde, c == 0xdf:
		return r.Map()
	case c <= 0x9f, c == 0xdc, c == 0xdd:
		return r.array()
	case c <= 0xbf, c == 0xd9, c == 0xda, c == 0xdb:
		return r.String()
	}
	save := r.i
	r.i++
	v, ok := r.scalar(c)
	if !ok {
		r.i = save
	}
	return v, ok
}

// scalar reads the body of a value whose code c was consumed.
func (r *Reader) scalar(c byte) (any, bool) {
	switch c {
	case 0xc0:
		return nil, true
	case 0xc2:
		return false, true
	case 0xc3:
		return true, true
	case 0xc4, 0xc5, 0xc6:
		r.i--
		return r.Bytes()
	case 0xca:
		n, ok := r.n(4)
		return math.Float32frombits(uint32(n)), ok
	case 0xcb:
		n, ok := r.n(8)
		return math.Float64frombits(n), ok
	case 0xcc:
		n, ok := r.n(1)
		return uint8(n), ok
	case 0xcd:
		n, ok := r.n(2)
		return uint16(n), ok
	case 0xce:
		n, ok := r.n(4)
		return uint32(n), ok
	case 0xcf:
		n, ok := r.n(8)
		return n, ok
	case 0xd0:
		n, ok := r.n(1)
		return int8(n), ok
	case 0xd1:
		n, ok := r.n(2)
		return int16(n), ok
	case 0xd2:
		n, ok := r.n(4)
		return int32(n), ok
	case 0xd3:
		n, ok := r.n(8)
		return int64(n), ok
	}
	return nil, false // ext, or 0xc1
}

// Map reads a map[string]any as the reflective decoder does (nil as a nil
// map, a repeated key's last value wins); a key that is not a str is left
// to the reflective decoder.
func (r *Reader) Map() (map[string]any, bool) {
	if r.Nil() {
		return nil, true
	}
	n, ok := r.MapLen()
	if !ok {
		return nil, false
	}
	m := make(map[string]any, n)
	for range n {
		k, ok := r.Key()
		if !ok {
			return nil, false
		}
		v, ok := r.Any()
		if !ok {
			return nil, false
		}
		m[string(k)] = v
	}
	return m, true
}

func (r *Reader) array() ([]any, bool) {
	n, ok := r.ArrayLen()
	if !ok {
		return nil, false
	}
	s := make([]any, 0, n)
	for range n {
		v, ok := r.Any()
		if !ok {
			return nil, false
		}
		s = append(s, v)
	}
	return s, true
}

// Skip passes over one value of any kind, as the reflective decoder skips
// an unknown field. It keeps a count of values still to pass instead of a
// stack, so nesting costs nothing.
func (r *Reader) Skip() bool {
	for left := uint64(1); left > 0; left-- {
		c, ok := r.peek()
		if !ok {
			return false
		}
		r.i++
		var size uint64
		switch {
		case c <= 0x7f, c >= 0xe0, c == 0xc0, c == 0xc2, c == 0xc3:
		case c <= 0x8f:
			left += 2 * uint64(c&0x0f)
		case c <= 0x9f:
			left += uint64(c & 0x0f)
		case c <= 0xbf:
			size = uint64(c & 0x1f)
		default:
			if size, ok = r.skipSized(c, &left); !ok {
				return false
			}
		}
		if _, ok := r.take(size); !ok {
			return false
		}
	}
	return true
}

// skipSized reads the header of a value with a length or a fixed width
// and returns the bytes its body takes, or adds a container's elements to
// left.
func (r *Reader) skipSized(c byte, left *uint64) (uint64, bool) {
	switch c {
	case 0xc4, 0xd9:
		return r.n(1)
	case 0xc5, 0xda:
		return r.n(2)
	case 0xc6, 0xdb:
		return r.n(4)
	case 0xc7, 0xc8, 0xc9: // ext: length, type, data
		n, ok := r.n(1 << (c - 0xc7))
		return n + 1, ok
	case 0xcc, 0xd0:
		return 1, true
	case 0xcd, 0xd1:
		return 2, true
	case 0xca, 0xce, 0xd2:
		return 4, true
	case 0xcb, 0xcf, 0xd3:
		return 8, true
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext: type, data
		return 1 + 1<<(c-0xd4), true
	case 0xdc, 0xdd, 0xde, 0xdf:
		n, ok := r.n(2 << ((c - 0xdc) % 2))
		if c >= 0xde {
			n *= 2
		}
		if !ok || n > uint64(len(r.b)-r.i) {
			return 0, false
		}
		*left += n
		return 0, true
	}
	return 0, false // 0xc1
}
