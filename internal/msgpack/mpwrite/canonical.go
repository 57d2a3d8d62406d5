package mpwrite

import "slices"

// Canonical writes a normalised args value (wire.CanonicalArgs: nil,
// bool, string, []byte, int64, uint64, float64, []any, map[string]any) as
// a msgpack.Encoder with SetSortMapKeys(true) and UseCompactInts(true)
// writes it: map keys sorted, integers in their shortest form. The bytes
// are hashed to find duplicates, so they must stay exactly these
// (FuzzCanonicalMatchesEncoder). For a value holding any other type it
// writes nothing and reports false: the caller encodes it reflectively.
func (w *Writer) Canonical(v any) bool { return w.whole(v, w.canonical) }

func (w *Writer) canonical(v any) bool {
	switch v := v.(type) {
	case nil:
		w.buf = append(w.buf, 0xc0)
	case bool, string, float64:
		return w.json(v) // as JSONValue: the canonical encoder does not compact floats
	case int64:
		w.int(v)
	case uint64:
		w.uint(v)
	case []byte:
		w.BytesValue(v)
	case []any:
		return w.array(v, w.canonical)
	case map[string]any:
		return w.sortedMap(v)
	default:
		return false
	}
	return true
}

func (w *Writer) sortedMap(m map[string]any) bool {
	if m == nil {
		w.buf = append(w.buf, 0xc0)
		return true
	}
	w.MapLen(len(m))
	var small [16]string // most args maps are small: no allocation for their keys
	keys := small[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w.str(k)
		if !w.canonical(m[k]) {
			return false
		}
	}
	return true
}
