package gateway

import (
	"os"

	"github.com/atmostonce/toolexec/internal/tokenfile"
)

// ReloadOnSignal reloads the tenants file at path on every sig (SIGHUP by
// convention) until stop is called, logging the outcome: a file with an
// error is refused whole and the tenants in force stay.
func (g *Gateway) ReloadOnSignal(path string, sig ...os.Signal) (stop func()) {
	return tokenfile.OnSignal(func() {
		if err := g.ReloadTenants(path); err != nil {
			g.log.Error("tenants file not reloaded; the previous tenants stay in force", "err", err)
			return
		}
		g.log.Info("tenants file reloaded", "path", path, "tenants", len(g.cfg.Tenants.Current().Names()))
	}, sig...)
}
