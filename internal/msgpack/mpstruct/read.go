package mpstruct

import (
	"reflect"
	"unsafe"

	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
)

// Unmarshal decodes b into v, which must be zero, as the reflective
// decoder would, or reports false for an input it declines (the package
// doc lists them); v is then partly written and must be discarded.
func (c *Codec[T]) Unmarshal(b []byte, v *T) bool {
	r := mpread.New(b)
	return c.p.read(&r, unsafe.Pointer(v))
}

// read reads a map into the struct at base, field by field: the one loop
// of every hand-written decoder (map length, name, value, and a seen bit
// per field, since a field given twice is reflection's to merge). A name
// the struct does not have is skipped, as reflection skips it. Fields
// come in the order the encoder writes them, so the fields after the last
// one read are tried before the lookup by name.
func (p *plan) read(r *mpread.Reader, base unsafe.Pointer) bool {
	n, ok := r.MapLen()
	if !ok {
		return false
	}
	var seen uint64
	next := 0
	for range n {
		name, ok := p.name(r)
		if !ok {
			return false
		}
		i, ok := p.index(name, next)
		if !ok {
			if p.opts.StrictNames || !r.Skip() {
				return false
			}
			continue
		}
		if seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		next = i + 1
		f := &p.fields[i]
		if !p.readField(r, f, unsafe.Add(base, f.off)) {
			return false
		}
	}
	return true
}

// index finds the field called name: first among the fields from next
// on (the encoder writes them in order, leaving out the empty ones), then
// by name (any order).
func (p *plan) index(name []byte, next int) (int, bool) {
	for i := next; i < len(p.fields); i++ {
		if f := &p.fields[i]; len(f.name) == len(name) && f.name[0] == name[0] && f.name == string(name) {
			return i, true
		}
	}
	i, ok := p.byName[string(name)]
	return i, ok
}

// name reads a field's name, not copied: a str, or with BinStrings a bin.
func (p *plan) name(r *mpread.Reader) ([]byte, bool) {
	if p.opts.BinStrings {
		return r.KeyOrBin()
	}
	return r.Key()
}

// readField reads f's value into at, in the forms p's options take.
func (p *plan) readField(r *mpread.Reader, f *field, at unsafe.Pointer) (ok bool) {
	switch {
	case f.kind == kString && p.opts.BinStrings:
		*(*string)(at), ok = r.StringOrBin()
		return ok
	case f.kind == kUint8 && p.opts.WrapUint8:
		var v uint64
		v, ok = r.Uint64()
		*(*uint8)(at) = uint8(v) // reflection keeps the low byte
		return ok
	case f.reflective:
		return r.Nil()
	}
	return f.read(r, at)
}

// read reads f's value into at.
func (f *field) read(r *mpread.Reader, at unsafe.Pointer) (ok bool) {
	switch f.kind {
	case kString:
		*(*string)(at), ok = r.String()
	case kBytes:
		*(*[]byte)(at), ok = r.Bytes()
	case kInt:
		var v int64
		v, ok = r.Int64()
		*(*int)(at) = int(v)
	case kInt64:
		*(*int64)(at), ok = r.Int64()
	case kUint8:
		*(*uint8)(at), ok = r.Uint8() // a value that would wrap is reflection's
	case kBool:
		*(*bool)(at), ok = r.Bool()
	case kMap:
		*(*map[string]any)(at), ok = r.Map()
	case kAny:
		*(*any)(at), ok = r.Any()
	default:
		return f.readNested(r, at)
	}
	return ok
}

// readNested reads a struct (nil is reflection's), a pointer to one or a
// slice of them (nil as nil).
func (f *field) readNested(r *mpread.Reader, at unsafe.Pointer) bool {
	if f.kind == kStruct {
		return f.sub.read(r, at)
	}
	if r.Nil() {
		return true
	}
	if f.kind == kPtr {
		p := reflect.New(f.elem).UnsafePointer()
		*(*unsafe.Pointer)(at) = p
		return f.sub.read(r, p)
	}
	n, ok := r.ArrayLen()
	if !ok {
		return false
	}
	s := reflect.MakeSlice(reflect.SliceOf(f.elem), n, n)
	*(*sliceHeader)(at) = sliceHeader{data: s.UnsafePointer(), len: n, cap: n}
	for i := range n {
		if !f.sub.read(r, unsafe.Add(s.UnsafePointer(), uintptr(i)*f.elem.Size())) {
			return false
		}
	}
	return true
}
