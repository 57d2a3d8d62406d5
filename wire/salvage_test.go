package wire

import (
	"reflect"
	"strings"
	"testing"
)

// TestWrongTypeFieldKnowsEveryField: every field of Intent, read from the
// struct here and not from intentFields, is named by wrongTypeField when
// its value has another type, and passes with its own. A field of a Go
// type the derivation does not know fails here until kindOf learns it;
// only an interface field takes any value, and it is listed.
func TestWrongTypeFieldKnowsEveryField(t *testing.T) {
	anyValue := map[string]bool{"result": true} // a resolve's result: any msgpack value
	right := map[fieldKind]any{kindString: "s", kindInteger: int64(1), kindBool: true, kindMap: map[string]any{}}
	kinds := map[string]fieldKind{}
	for _, f := range intentFields {
		kinds[f.name] = f.kind
	}
	typ := reflect.TypeFor[Intent]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("msgpack"), ",")
		kind, ok := kinds[name]
		switch {
		case !ok:
			t.Errorf("field %s (%s): not among the fields wrongTypeField checks", name, typ.Field(i).Name)
			continue
		case typ.Field(i).Type.Kind() == reflect.Interface:
			if !anyValue[name] || kind != kindAny {
				t.Errorf("field %s takes any value: list it in anyValue (kind %d)", name, kind)
			}
			continue
		case kind == kindAny:
			t.Errorf("field %s (%s): wrongTypeField does not check its type; teach kindOf", name, typ.Field(i).Type)
			continue
		}
		if got := wrongTypeField(map[string]any{name: right[kind]}); got != "" {
			t.Errorf("field %s with a value of its type: wrongTypeField = %q, want none", name, got)
		}
		wrong := any(map[string]any{})
		if kind == kindMap {
			wrong = "s"
		}
		if got := wrongTypeField(map[string]any{name: wrong}); got != name {
			t.Errorf("field %s with a value of another type: wrongTypeField = %q, want %q", name, got, name)
		}
	}
}
