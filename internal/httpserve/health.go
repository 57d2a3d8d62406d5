package httpserve

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Health returns a mux serving /healthz (ok: the process answers; in a
// Process the Handoff answers /healthz from the loops' Liveness instead),
// /readyz (200 once ready reports true, 503 before) and, when reg is not
// nil, /metrics from reg. Callers add their own routes to it.
func Health(reg *prometheus.Registry, ready func() bool) *http.ServeMux {
	mux := http.NewServeMux()
	if reg != nil {
		// OpenMetrics when the scraper asks for it: the only format that
		// carries exemplars (the trace ids of latency observations).
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ready")
	})
	return mux
}
