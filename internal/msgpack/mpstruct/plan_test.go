package mpstruct

import (
	"slices"
	"strings"
	"testing"
)

type inner struct {
	A string `msgpack:"a"`
}

type outer struct {
	inner `msgpack:",inline"`
	B     int64          `msgpack:"b,omitempty"`
	C     *inner         `msgpack:"c"`
	D     []inner        `msgpack:"d,omitempty"`
	E     map[string]any `msgpack:"e"`
	F     any            `msgpack:"f"`
	G     bool           `msgpack:"-"`
	h     string         //nolint:unused // unexported: not planned
}

// TestPlanFollowsTheTags: inline fields come first at their place, "-"
// and unexported fields are left out, names are the tags'.
func TestPlanFollowsTheTags(t *testing.T) {
	got := For[outer]().Fields()
	if want := []string{"a", "b", "c", "d", "e", "f"}; !slices.Equal(got, want) {
		t.Fatalf("planned %v, want %v", got, want)
	}
}

// TestForRefusesWhatItCannotPlan: a kind it does not know, and a
// Reflective name that is not a pointer field, fail at planning.
func TestForRefusesWhatItCannotPlan(t *testing.T) {
	type float struct {
		X float64 `msgpack:"x"`
	}
	for name, plan := range map[string]func(){
		"float field":        func() { For[float]() },
		"reflective non-ptr": func() { For[outer](Options{Reflective: []string{"b"}}) },
	} {
		func() {
			defer func() {
				if p := recover(); p == nil || !strings.Contains(p.(string), "mpstruct:") {
					t.Errorf("%s: planned (%v), want a panic", name, p)
				}
			}()
			plan()
		}()
	}
}
