package console

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/atmostonce/toolexec/internal/tokenfile"
)

// A reload of operators that list a tenant's gateway token is refused
// (SIGHUP): the operators in force stay, the tenant's token does not open
// the console, and the refusal is counted as shared_token.
func TestReloadRefusesATenantsToken(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "operators.yaml")
	write := func(names ...string) {
		s := "operators:\n"
		for _, n := range names {
			s += "  - name: " + n + "\n    tokens: [\"" + tokenfile.HashToken(n+"-token") + "\"]\n"
		}
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("alice")
	ops, err := NewOperatorStore(path)
	if err != nil {
		t.Fatal(err)
	}
	tenants, err := tokenfile.Single(tokenfile.Kind{List: "tenants", Item: "tenant", ValidName: func(string) bool { return true }, Err: errors.New("t")}, "acme", "acme-token")
	if err != nil {
		t.Fatal(err)
	}
	apart := tokenfile.NewDisjoint()
	if err := apart.Put("tenants", tenants, func() {}); err != nil {
		t.Fatal(err)
	}
	if err := ops.KeepApart(apart); err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	ops.CountReloads(reg)
	write("alice", "acme") // acme's gateway token, listed as an operator's
	ops.reload(slog.Default())
	if _, _, ok := ops.Current().Lookup("acme-token"); ok {
		t.Fatal("a tenant's token opens the console")
	}
	if _, _, ok := ops.Current().Lookup("alice-token"); !ok {
		t.Fatal("the operators in force were dropped")
	}
	var m dto.Metric
	if err := ops.reloads.WithLabelValues("shared_token").Write(&m); err != nil || m.GetCounter().GetValue() != 1 {
		t.Fatalf("operator_reloads_total{result=shared_token} = %v (%v)", m.GetCounter().GetValue(), err)
	}
}
