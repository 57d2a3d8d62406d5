package mpstruct

import (
	"math/bits"
	"unsafe"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/internal/msgpack/mpwrite"
)

// Append writes v to w as the reflective encoder would, or reports false
// for a value it declines (the package doc lists them); w then holds a
// partial value and must be discarded.
func (c *Codec[T]) Append(w *mpwrite.Writer, v *T) bool {
	return c.p.write(w, unsafe.Pointer(v))
}

// Marshal encodes v into a new slice, or reports false.
func (c *Codec[T]) Marshal(v *T) ([]byte, bool, error) {
	w := mpwrite.Get()
	defer mpwrite.Put(w)
	if !c.Append(w, v) {
		return nil, false, nil
	}
	b, err := w.Bytes()
	return b, true, err
}

// FieldSet is a set of a struct's fields, by their index in its plan.
type FieldSet uint64

// Len is the number of fields in s.
func (s FieldSet) Len() int { return bits.OnesCount64(uint64(s)) }

// Present is the set of v's fields that Append writes: all but the
// omitempty ones that are empty.
func (c *Codec[T]) Present(v *T) FieldSet { return c.p.present(unsafe.Pointer(v)) }

// AppendFields writes the fields of set (from Present), name and value,
// without the map's header: for a caller that writes fields of its own
// into the same map (the header's count is theirs and set.Len()). It
// reports false as Append.
func (c *Codec[T]) AppendFields(w *mpwrite.Writer, v *T, set FieldSet) bool {
	return c.p.writeFields(w, unsafe.Pointer(v), set)
}

// write writes the struct at base: the count of the fields it writes,
// then each, in order.
func (p *plan) write(w *mpwrite.Writer, base unsafe.Pointer) bool {
	set := p.present(base)
	w.MapLen(set.Len())
	return p.writeFields(w, base, set)
}

// present is the set of the struct's fields written: an omitempty field
// is left out when empty.
func (p *plan) present(base unsafe.Pointer) FieldSet {
	set := p.all
	for _, i := range p.omitEmpty {
		f := &p.fields[i]
		at := unsafe.Add(base, f.off)
		var empty bool
		switch f.kind { // the common kinds here, the rest in omitted
		case kString:
			empty = *(*string)(at) == ""
		case kInt64:
			empty = *(*int64)(at) == 0
		case kBytes:
			empty = len(*(*[]byte)(at)) == 0
		default:
			empty = f.omitted(base)
		}
		if empty {
			set &^= 1 << i
		}
	}
	return set
}

// writeFields writes the fields of set, in order.
func (p *plan) writeFields(w *mpwrite.Writer, base unsafe.Pointer, set FieldSet) bool {
	for set != 0 {
		i := bits.TrailingZeros64(uint64(set))
		set &= set - 1
		f := &p.fields[i]
		if !f.write(w, unsafe.Add(base, f.off)) {
			return false
		}
	}
	return true
}

// omitted reports whether f is left out of the struct at base: omitempty
// and empty, as the reflective encoder judges it (an any by what it
// holds: a RawMessage when empty).
func (f *field) omitted(base unsafe.Pointer) bool {
	at := unsafe.Add(base, f.off)
	switch f.kind {
	case kString:
		return *(*string)(at) == ""
	case kBytes:
		return len(*(*[]byte)(at)) == 0
	case kInt:
		return *(*int)(at) == 0
	case kInt64:
		return *(*int64)(at) == 0
	case kUint8:
		return *(*uint8)(at) == 0
	case kBool:
		return !*(*bool)(at)
	case kPtr:
		return *(*unsafe.Pointer)(at) == nil
	case kSlice:
		return (*sliceHeader)(at).len == 0
	case kMap:
		return len(*(*map[string]any)(at)) == 0
	case kAny:
		v := *(*any)(at)
		raw, isRaw := v.(msgpack.RawMessage)
		return v == nil || (isRaw && len(raw) == 0)
	}
	return false // a struct value is never empty
}

// write writes f's name and its value at at.
func (f *field) write(w *mpwrite.Writer, at unsafe.Pointer) bool {
	if f.kind == kAny {
		return f.writeAny(w, *(*any)(at))
	}
	w.Encoded(f.encName)
	switch f.kind {
	case kString:
		w.StrValue(*(*string)(at))
	case kBytes:
		w.BytesValue(*(*[]byte)(at))
	case kInt:
		w.IntValue(*(*int)(at))
	case kInt64:
		w.Int64Value(*(*int64)(at))
	case kUint8:
		w.Uint8Value(*(*uint8)(at))
	case kBool:
		w.BoolValue(*(*bool)(at))
	default:
		return f.writeNested(w, at)
	}
	return true
}

// writeNested writes a struct, a pointer to one or a slice of them.
func (f *field) writeNested(w *mpwrite.Writer, at unsafe.Pointer) bool {
	switch f.kind {
	case kStruct:
		return f.sub.write(w, at)
	case kPtr:
		p := *(*unsafe.Pointer)(at)
		if p == nil {
			w.Nil()
			return true
		}
		return !f.reflective && f.sub.write(w, p)
	case kSlice:
		s := (*sliceHeader)(at)
		if s.data == nil {
			w.Nil()
			return true
		}
		w.ArrayLen(s.len)
		for i := range s.len {
			if !f.sub.write(w, unsafe.Add(s.data, uintptr(i)*f.elem.Size())) {
				return false
			}
		}
		return true
	}
	return false // a map: reflection's
}

// writeAny writes an any field: nil, or a msgpack.RawMessage as it is.
func (f *field) writeAny(w *mpwrite.Writer, v any) bool {
	switch v := v.(type) {
	case nil:
		w.Name(f.name)
		w.Nil()
	case msgpack.RawMessage:
		w.Raw(f.name, v)
	default:
		return false // omitempty looks through an interface: only reflection judges it exactly
	}
	return true
}

// sliceHeader is a slice's layout (reflect.SliceHeader without the
// deprecation).
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}
