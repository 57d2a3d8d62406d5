package wire

// What is read from an intent that cannot be decoded, so that its
// rejection can still be answered.

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/msgpack/mpread"
	"github.com/vmihailenco/msgpack/v5"
)

// salvage reads the string fields it can from a message whose typed decode
// failed, so that the rejection can still be answered: the top-level
// strings whatever the other fields hold (salvageStrings), and, when the
// map decodes, the field whose type is wrong (invalid_field).
func salvage(value []byte, rej *Reject) {
	var m map[string]any
	if unmarshal(value, &m) == nil {
		rej.Reason = codes.ReasonInvalidField
		if f := wrongTypeField(m); f != "" {
			rej.Detail = fmt.Sprintf("field %s has the wrong type (%s)", f, rej.Detail)
		}
	}
	salvageStrings(value, rej)
}

// wrongTypeField names the first field of m whose msgpack type the
// Intent cannot hold, or "" when none is found at the top level.
func wrongTypeField(m map[string]any) string {
	for _, f := range intentFields {
		if v, ok := m[f.name]; ok && v != nil && !f.kind.holds(v) {
			return f.name
		}
	}
	return ""
}

// intentFields are Intent's fields as msgpack names them, in the order
// they are declared: derived from the struct, so that a field added to it
// is checked without a list to keep in step (TestWrongTypeFieldKnowsEveryField).
var intentFields = fieldsOf(reflect.TypeFor[Intent]())

// wireField is one field of a struct of the wire and the msgpack type it
// holds.
type wireField struct {
	name string
	kind fieldKind
}

// fieldKind is the msgpack type a field holds, as the decoded map of a
// message shows it.
type fieldKind uint8

const (
	kindAny     fieldKind = iota // an interface: every value fits
	kindString                   // a string
	kindInteger                  // an integer of any width
	kindBool                     // a bool
	kindMap                      // a map, or a struct (a map on the wire)
)

func fieldsOf(t reflect.Type) []wireField {
	var out []wireField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("msgpack"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		out = append(out, wireField{name: name, kind: kindOf(f.Type)})
	}
	return out
}

// kindOf is the msgpack type a field of Go type t holds; kindAny for a
// type it does not know, which the test of wrongTypeField refuses for
// any but an interface.
func kindOf(t reflect.Type) fieldKind {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return kindString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return kindInteger
	case reflect.Bool:
		return kindBool
	case reflect.Map, reflect.Struct:
		return kindMap
	}
	return kindAny
}

// holds reports whether v, a value of a message decoded into a map, fits
// a field of kind k.
func (k fieldKind) holds(v any) bool {
	switch k {
	case kindString:
		_, ok := v.(string)
		return ok
	case kindInteger:
		switch v.(type) {
		case int8, int16, int32, int64, uint8, uint16, uint32, uint64:
			return true
		}
		return false
	case kindBool:
		_, ok := v.(bool)
		return ok
	case kindMap:
		_, ok := v.(map[string]any)
		return ok
	}
	return true
}

// salvageLarge reads the identifying string fields at the top level of a
// value too large to decode; see salvageStrings.
func salvageLarge(value []byte, rej *Reject) {
	if len(value) == 0 || !mpread.IsMapCode(value[0]) || mpread.CheckShape(value, maxNesting) != nil {
		return
	}
	salvageStrings(value, rej)
}

// salvageStrings reads the identifying string fields at the top level of
// a map that cannot be decoded (too large, a field of the wrong type, an
// extension where a value was expected), so that its rejection can still
// be answered: every intent whose id can be read gets an answer, on its
// reply_to. It decodes only short strings and skips everything else
// without interpreting it. The caller has run the shape walk
// (mpread.CheckShape), which bounds what skipping can cost.
func salvageStrings(value []byte, rej *Reject) {
	dec := msgpack.NewDecoder(bytes.NewReader(value))
	n, err := dec.DecodeMapLen()
	if err != nil {
		return
	}
	partial := &Intent{}
	fields := map[string]*string{"id": &partial.ID, "tenant": &partial.Tenant, "key": &partial.Key,
		"tool": &partial.Tool, "reply_to": &partial.ReplyTo, "type": &partial.Type}
	defer rej.from(partial) // what was read before a field that cannot be skipped
	for i := 0; i < n; i++ {
		name, err := decodeShortString(dec)
		if err != nil && !errors.Is(err, errNotShortString) {
			return
		}
		dst, want := fields[name]
		if err != nil || !want {
			if dec.Skip() != nil {
				return
			}
			continue
		}
		switch s, err := decodeShortString(dec); {
		case err == nil:
			*dst = s
		case !errors.Is(err, errNotShortString):
			return
		}
	}
}

// decodeShortString decodes a string of at most MaxKeyBytes; anything
// else is skipped and is an error.
func decodeShortString(dec *msgpack.Decoder) (string, error) {
	code, err := dec.PeekCode()
	if err != nil {
		return "", err
	}
	if !isStrCode(code) {
		if err := dec.Skip(); err != nil {
			return "", err
		}
		return "", errNotShortString
	}
	s, err := dec.DecodeString()
	if err != nil {
		return "", err
	}
	if len(s) > MaxKeyBytes {
		return "", errNotShortString
	}
	return s, nil
}

var errNotShortString = errors.New("wire: not a short string")

func isStrCode(c byte) bool { return (c >= 0xa0 && c <= 0xbf) || c == 0xd9 || c == 0xda || c == 0xdb }
