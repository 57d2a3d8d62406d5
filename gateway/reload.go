package gateway

import (
	"os"

	"github.com/atmostonce/toolexec/internal/tokenfile"
)

// ReloadOnSignal reloads the tenants file at path on every sig (SIGHUP by
// convention) until stop is called; see ReloadOn.
func (g *Gateway) ReloadOnSignal(path string, sig ...os.Signal) (stop func()) {
	return tokenfile.OnSignal(func() { g.reload(path) }, sig...)
}

// ReloadOn reloads the tenants file at path on every value of signals
// until stop is called, logging the outcome: a file with an error is
// refused whole and the tenants in force stay. A process that catches its
// signals before a long start (cli.Hangups) hands their channel here, so
// that one sent during the start is applied once the gateway runs.
func (g *Gateway) ReloadOn(path string, signals <-chan os.Signal) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-signals:
				g.reload(path)
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}

// reload reloads the tenants file and logs the outcome.
func (g *Gateway) reload(path string) {
	if err := g.ReloadTenants(path); err != nil {
		g.log.Error("tenants file not reloaded; the previous tenants stay in force", "err", err)
		return
	}
	g.log.Info("tenants file reloaded", "path", path, "tenants", len(g.cfg.Tenants.Current().Names()))
}
