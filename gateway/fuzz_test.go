package gateway

import (
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
