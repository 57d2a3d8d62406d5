package gateway

import (
	"errors"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/wire"
)

// The tenants file is operator input read on every SIGHUP: it must never
// panic, and whatever it accepts is well formed.
func FuzzParseTenants(f *testing.F) {
	f.Add([]byte(tenantsYAML(tenantEntry("acme", "a", "b"), tenantEntry("globex", "c"))))
	f.Add([]byte("tenants: [{name: x, tokens: [\"sha256:" + strings.Repeat("ab", 32) + "\"]}]\n"))
	f.Add([]byte("tenants:\n  - &a {name: x, tokens: []}\n  - *a\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := ParseTenants(data)
		if err != nil {
			return
		}
		for _, n := range ts.Names() {
			if !wire.ValidTenant(n) || !ts.Has(n) {
				t.Fatalf("accepted tenant %q", n)
			}
		}
	})
}

// checkJSONText never panics, and never refuses a text that
// encoding/json reads as it is written: a refusal is only for bytes that
// are not UTF-8, lone surrogates, or a member named twice.
func FuzzCheckJSONText(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":"\ud800"}`, `{"a":1,"a":2}`, "\"", `{"\u0061":1,"a":2}`, `[{"a":[{"a":1}]}]`, "{\"a\":\"\xff\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		err := checkJSONText(b)
		if err != nil && !errors.Is(err, errJSONText) {
			t.Fatalf("%q: %v", b, err)
		}
	})
}
