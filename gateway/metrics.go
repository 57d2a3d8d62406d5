package gateway

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/internal/tracing"
)

// metrics are the gateway's collectors, namespace toolexec_gateway_.
// Tenants and keys are never labels (unbounded, and a tenant name may be
// confidential); routes and status codes are.
type metrics struct {
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	waiting       prometheus.Gauge
	authFailures  prometheus.Counter
	lookupSeconds prometheus.Histogram
	mcpCalls      *prometheus.CounterVec
	reloads       *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "toolexec", Subsystem: "gateway", Name: "requests_total",
			Help: "HTTP requests by route (list, call, get, compensate) and status code."}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "toolexec", Subsystem: "gateway", Name: "request_duration_seconds",
			Help: "HTTP request duration by route, waits included.", Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 14)}, []string{"route"}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "toolexec", Subsystem: "gateway", Name: "requests_waiting",
			Help: "Requests waiting for an answer from the executor."}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "toolexec", Subsystem: "gateway", Name: "auth_failures_total",
			Help: "Requests refused for a missing or unknown bearer token."}),
		lookupSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "toolexec", Subsystem: "gateway", Name: "lookup_duration_seconds",
			Help: "Event-log reads of GET and compensate requests, queueing included.", Buckets: prometheus.ExponentialBuckets(0.005, 2.5, 12)}),
		mcpCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "toolexec", Subsystem: "gateway", Name: "mcp_calls_total",
			Help: "MCP tools/call requests by the answer's status (running when the wait ended without one)."}, []string{"status"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "toolexec", Subsystem: "gateway", Name: "tenant_reloads_total",
			Help: "Reloads of the tenants file (SIGHUP) by result (ok, error)."}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.waiting, m.authFailures, m.lookupSeconds, m.mcpCalls, m.reloads)
	}
	return m
}

// observe counts a request; its duration carries the trace id of its
// span as an exemplar when the span is sampled, so that a slow bucket
// leads to a trace.
func (m *metrics) observe(route string, code int, d time.Duration, span trace.Span) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Inc()
	id := ""
	if span != nil {
		id = tracing.TraceID(span.SpanContext())
	}
	tracing.Observe(m.duration.WithLabelValues(route), d.Seconds(), id)
}

// ReloadTenants reads the tenants file again (on SIGHUP) and puts it in
// force; on an error the tenants in force stay, and the error names the
// line.
func (g *Gateway) ReloadTenants(path string) error {
	err := g.cfg.Tenants.Reload(path)
	if err != nil {
		g.m.reloads.WithLabelValues("error").Inc()
		return err
	}
	g.m.reloads.WithLabelValues("ok").Inc()
	return nil
}
