package httpserve

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/atmostonce/toolexec/internal/buildinfo"
)

// ProcessRegistry is the metrics registry of a process: its own collectors
// plus the Go runtime and process ones and toolexec_build_info. A component embedded next to
// another (the executor's reconciler) takes a bare prometheus.NewRegistry
// instead, so the runtime metrics are not exported twice.
func ProcessRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildinfo.Collector())
	return reg
}
