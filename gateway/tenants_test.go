package gateway

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/atmostonce/toolexec/internal/tokenfile"
)

func tenantsYAML(entries ...string) string { return "tenants:\n" + strings.Join(entries, "") }

func tenantEntry(name string, tokens ...string) string {
	s := "  - name: " + name + "\n    tokens:\n"
	for _, tok := range tokens {
		s += "      - \"" + HashToken(tok) + "\"\n"
	}
	return s
}

func TestTenantsAuthenticate(t *testing.T) {
	ts, err := ParseTenants([]byte(tenantsYAML(tenantEntry("acme", "tok-a1", "tok-a2"), tenantEntry("globex", "tok-g"))))
	if err != nil {
		t.Fatal(err)
	}
	for token, want := range map[string]string{"tok-a1": "acme", "tok-a2": "acme", "tok-g": "globex"} {
		if got, ok := ts.Authenticate(token); !ok || got != want {
			t.Errorf("%s: %q %v, want %s", token, got, ok, want)
		}
	}
	for _, token := range []string{"", "tok-a", "tok-a1 ", HashToken("tok-a1"), strings.Repeat("x", tokenfile.MaxTokenBytes+1)} {
		if got, ok := ts.Authenticate(token); ok {
			t.Errorf("%q authenticated as %s", token, got)
		}
	}
	if !ts.Has("acme") || ts.Has("initech") || strings.Join(ts.Names(), ",") != "acme,globex" {
		t.Fatalf("names %v", ts.Names())
	}
}

func TestTenantsErrorsNameTheLine(t *testing.T) {
	h := HashToken("x")
	tests := []struct{ name, yaml, want string }{
		{"empty", "", "empty"},
		{"not a mapping", "- a\n", "line 1: want a mapping"},
		{"unknown top field", "tenant: []\n", `line 1: unknown field "tenant"`},
		{"no list", "tenants: {}\n", "line 1: tenants: must be a list"},
		{"bad name", "tenants:\n  - name: Acme\n    tokens: [\"" + h + "\"]\n", `line 2: tenants[0]: name: "Acme" must match`},
		{"missing tokens", "tenants:\n  - name: acme\n", "line 2: tenants[0] (acme): tokens: required"},
		{"empty tokens", "tenants:\n  - name: acme\n    tokens: []\n", "line 3: tenants[0] (acme): tokens: must be a non-empty list"},
		{"raw token", "tenants:\n  - name: acme\n    tokens:\n      - my-secret\n", `line 4: tenants[0] (acme): tokens[0]: want "sha256:"`},
		{"short hash", "tenants:\n  - name: acme\n    tokens: [\"sha256:abcd\"]\n", "line 3: tenants[0] (acme): tokens[0]"},
		{"not hex", "tenants:\n  - name: acme\n    tokens: [\"sha256:" + strings.Repeat("zz", 32) + "\"]\n", "not hexadecimal"},
		{"unknown field", "tenants:\n  - name: acme\n    tokens: [\"" + h + "\"]\n    role: admin\n", `line 4: tenants[0]: unknown field "role"`},
		{"tenant twice", tenantsYAML(tenantEntry("acme", "a"), tenantEntry("acme", "b")), "line 5: tenants[1] (acme): name: tenant listed twice"},
		{"token shared", tenantsYAML(tenantEntry("acme", "a"), tenantEntry("globex", "a")), "line 7: tenants[1] (globex): tokens[0]: the same token hash is listed at line 4"},
		{"syntax", "tenants: [\n", "invalid YAML"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTenants([]byte(tc.yaml))
			if !errors.Is(err, ErrTenants) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// A reload with an error keeps the tenants in force; a good one replaces
// them (a rotated token works, the old one no longer does).
func TestTenantStoreReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tenants.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(tenantsYAML(tenantEntry("acme", "old")))
	first, err := LoadTenants(path)
	if err != nil {
		t.Fatal(err)
	}
	s := NewTenantStore(first)
	write("tenants:\n  - name: acme\n    tokens: [nope]\n")
	if err := s.Reload(path); err == nil || !strings.Contains(err.Error(), path+": gateway: tenants: line 3") {
		t.Fatalf("bad reload: %v", err)
	}
	if _, ok := s.Current().Authenticate("old"); !ok {
		t.Fatal("a failed reload dropped the tenants in force")
	}
	write(tenantsYAML(tenantEntry("acme", "new")))
	if err := s.Reload(path); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.Current().Authenticate("old"); ok {
		t.Fatal("the rotated-out token still works")
	}
	if tenant, ok := s.Current().Authenticate("new"); !ok || tenant != "acme" {
		t.Fatal("the new token does not work")
	}
}

// A reload of tenants that list a token of the operators file in force is
// refused (SIGHUP): the tenants in force stay, the operator's token does
// not become a tenant's, and the refusal is counted as shared_token.
func TestReloadRefusesATokenOfTheOperators(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tenants.yaml")
	if err := os.WriteFile(path, []byte(tenantsYAML(tenantEntry("acme", "acme-token"))), 0o600); err != nil {
		t.Fatal(err)
	}
	first, err := LoadTenants(path)
	if err != nil {
		t.Fatal(err)
	}
	apart := tokenfile.NewDisjoint()
	ops, err := tokenfile.Parse(tokenfile.Kind{List: "operators", Item: "operator", ValidName: func(string) bool { return true },
		MaxNames: 10, MaxTokens: 10, MaxHashes: 10, Err: errors.New("operators")}, []byte("operators:\n  - name: alice\n    tokens: [\""+HashToken("alice-token")+"\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := apart.Put("operators", ops, func() {}); err != nil {
		t.Fatal(err)
	}
	store := NewTenantStore(first)
	if err := store.KeepApart(apart); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	g := &Gateway{cfg: Config{Tenants: store}, m: newMetrics(reg), log: slog.Default()}
	if err := os.WriteFile(path, []byte(tenantsYAML(tenantEntry("acme", "acme-token"), tenantEntry("globex", "alice-token"))), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := g.ReloadTenants(path); !errors.Is(err, tokenfile.ErrShared) {
		t.Fatalf("a reload listing the operator's token: %v", err)
	}
	if _, ok := store.Current().Authenticate("alice-token"); ok {
		t.Fatal("the operator's token calls tools as a tenant")
	}
	if _, ok := store.Current().Authenticate("acme-token"); !ok {
		t.Fatal("the tenants in force were dropped")
	}
	var m dto.Metric
	if err := g.m.reloads.WithLabelValues("shared_token").Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
		t.Fatalf("reloads{result=shared_token} = %v (%v)", m.GetCounter().GetValue(), err)
	}
}
