package console

import (
	"log/slog"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
)

// Options are what a process gives the console: its flags, the backend,
// and the registry of its metrics.
type Options struct {
	OperatorsFile string // --operators; empty: the console is off
	ExternalURL   string // --console-url
	Backend       Backend
	Registerer    prometheus.Registerer // the process's; nil: no info metric
	Logger        *slog.Logger
}

// Open loads the operators file (when one is named), reloads it on SIGHUP
// until stop is called, and publishes toolexec_console_info{url} so that
// alert annotations can link to the console (deploy/prometheus).
func Open(o Options) (c *Console, stop func(), err error) {
	stop = func() {}
	var ops *OperatorStore
	if o.OperatorsFile != "" {
		if ops, err = NewOperatorStore(o.OperatorsFile); err != nil {
			return nil, nil, err
		}
		stop = ops.ReloadOnSignal(o.Logger, syscall.SIGHUP)
	}
	c, err = New(Config{Operators: ops, Backend: o.Backend, ExternalURL: o.ExternalURL, Logger: o.Logger})
	if err != nil {
		stop()
		return nil, nil, err
	}
	if o.Registerer != nil && c.On() {
		info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolexec_console_info", ConstLabels: prometheus.Labels{"url": o.ExternalURL},
			Help: "The operator console is served; url is its --console-url (empty when not set), which alert annotations link to."})
		info.Set(1)
		o.Registerer.MustRegister(info)
	}
	return c, stop, nil
}

// OffHint is what a process prints when it serves no console.
const OffHint = "operator console: off (no --operators file); to turn it on see docs/OPERATIONS.md, \"Operator console\""
