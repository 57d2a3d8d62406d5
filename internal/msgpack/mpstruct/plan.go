// Package mpstruct encodes and decodes Go structs as the reflective codec
// of github.com/vmihailenco/msgpack/v5 (default options) does, without
// reflection per value: a Codec is planned once per type from its msgpack
// tags (names, omitempty, inline), and its fields are then read and
// written at their offsets with internal/msgpack/mpread and internal/msgpack/mpwrite.
//
// It is the one hand-written codec of the executor's hot records (the
// event envelope, the stored record, the intent, the answer): each
// package declares its type's Codec next to the type's other rules, and
// this package knows nothing of the domain. What a Codec does not handle
// it declines (ok=false), and the caller uses the reflective codec, which
// then decides: so what is accepted and rejected, and every value, stays
// the reflective codec's. The callers' fuzz tests hold the two together.
//
// Declined when encoding: an any field holding anything but nil or a
// msgpack.RawMessage, a map field. Declined when decoding: a value that is
// not a map, a key that is neither a str nor a bin, a field given twice
// (reflection merges or lets the last win), a struct value field given as
// nil, an ext value, any input that is short or malformed.
//
// Field kinds planned (any other panics at planning, which a package's
// tests reach at init): string, []byte, int (written in its shortest
// form), int64 (written in 9 bytes), uint8 kinds (written as cc nn; a
// value over 255 on reading is declined), bool, a struct, a pointer
// to a struct, a slice of structs, map[string]any and any (read as
// DecodeInterface reads them).
package mpstruct

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/atmostonce/toolexec/internal/msgpack/mpwrite"
)

type kind uint8

const (
	kString kind = iota
	kBytes
	kInt
	kInt64
	kUint8
	kBool
	kStruct // a struct value: a map, never nil
	kPtr    // a pointer to a struct: nil or a map
	kSlice  // a slice of structs: nil or an array of maps
	kMap    // map[string]any
	kAny    // any
)

// field is one field of a plan, at its offset in the outermost struct
// (an inline struct's fields are the outer struct's).
type field struct {
	name       string
	encName    []byte // name as msgpack writes it
	off        uintptr
	kind       kind
	omitEmpty  bool
	sub        *plan        // kStruct, kPtr, kSlice: the element's plan
	elem       reflect.Type // kPtr, kSlice: the element type, to allocate
	reflective bool         // kPtr: a value not nil is declined (Options.Reflective)
}

// plan is a struct type's fields in the order the reflective encoder
// writes them.
type plan struct {
	fields    []field
	byName    map[string]int
	omitEmpty []int    // the fields that may be left out, by index
	all       FieldSet // every field
	opts      Options
}

// Options choose, for the outermost struct of a Codec (its nested structs
// take none), between forms that the reflective decoder reads alike:
// which of them the plan reads itself and which it declines. The zero
// value reads names and strings as str only, declines a uint8 over 255,
// skips an unknown name.
type Options struct {
	// BinStrings: names and string fields may be a bin as well as a str.
	BinStrings bool
	// WrapUint8: a uint8 field takes any integer, narrowed to its low
	// byte as reflection narrows it.
	WrapUint8 bool
	// StrictNames: a name the struct does not have is declined.
	StrictNames bool
	// Reflective names pointer fields whose value, when not nil, only
	// reflection reads and writes (a value declined either way).
	Reflective []string
}

// Codec is the plan of T. Safe for concurrent use.
type Codec[T any] struct{ p *plan }

// For plans T with opts (none, or one). It panics when T has a field of a
// kind not listed in the package doc: call it at package initialisation.
func For[T any](opts ...Options) *Codec[T] {
	t := reflect.TypeFor[T]()
	p := &plan{byName: map[string]int{}}
	p.add(t, 0, map[reflect.Type]*plan{})
	if len(opts) > 0 {
		p.opts = opts[0]
	}
	for _, name := range p.opts.Reflective {
		i, ok := p.byName[name]
		if !ok || p.fields[i].kind != kPtr {
			panic(fmt.Sprintf("mpstruct: %s: Reflective names %q, not a pointer field", t, name))
		}
		p.fields[i].reflective = true
	}
	return &Codec[T]{p: p}
}

func planOf(t reflect.Type, seen map[reflect.Type]*plan) *plan {
	if p, ok := seen[t]; ok {
		return p
	}
	p := &plan{byName: map[string]int{}}
	seen[t] = p
	p.add(t, 0, seen)
	return p
}

// add appends t's fields at base, inline structs flattened, as the
// reflective codec lists them.
func (p *plan) add(t reflect.Type, base uintptr, seen map[reflect.Type]*plan) {
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opts, _ := strings.Cut(sf.Tag.Get("msgpack"), ",")
		switch {
		case sf.Anonymous && opts == "inline":
			p.add(sf.Type, base+sf.Offset, seen)
			continue
		case name == "-" || !sf.IsExported():
			continue
		case name == "":
			name = sf.Name
		}
		f := field{name: name, encName: mpwrite.EncodeName(name), off: base + sf.Offset, omitEmpty: opts == "omitempty"}
		f.kind, f.sub, f.elem = classify(t, sf, seen)
		p.byName[name] = len(p.fields)
		if f.omitEmpty {
			p.omitEmpty = append(p.omitEmpty, len(p.fields))
		}
		p.all |= 1 << len(p.fields)
		p.fields = append(p.fields, f)
	}
	if len(p.fields) > 64 {
		panic(fmt.Sprintf("mpstruct: %s has %d fields, more than the 64 bits of a read's seen set", t, len(p.fields)))
	}
}

func classify(t reflect.Type, sf reflect.StructField, seen map[reflect.Type]*plan) (kind, *plan, reflect.Type) {
	ft := sf.Type
	switch {
	case ft.Kind() == reflect.String:
		return kString, nil, nil
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Uint8:
		return kBytes, nil, nil
	case ft.Kind() == reflect.Int:
		return kInt, nil, nil
	case ft.Kind() == reflect.Int64:
		return kInt64, nil, nil
	case ft.Kind() == reflect.Uint8:
		return kUint8, nil, nil
	case ft.Kind() == reflect.Bool:
		return kBool, nil, nil
	case ft.Kind() == reflect.Struct:
		return kStruct, planOf(ft, seen), nil
	case ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct:
		return kPtr, planOf(ft.Elem(), seen), ft.Elem()
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
		return kSlice, planOf(ft.Elem(), seen), ft.Elem()
	case ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String && ft.Elem().Kind() == reflect.Interface:
		return kMap, nil, nil
	case ft.Kind() == reflect.Interface && ft.NumMethod() == 0:
		return kAny, nil, nil
	}
	panic(fmt.Sprintf("mpstruct: %s.%s: a field of type %s is not planned", t, sf.Name, ft))
}

// Fields lists the planned field names, in the order they are written.
func (c *Codec[T]) Fields() []string {
	out := make([]string, len(c.p.fields))
	for i, f := range c.p.fields {
		out[i] = f.name
	}
	return out
}
