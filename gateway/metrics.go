package gateway

import (
	"errors"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/internal/tokenfile"
	"github.com/atmostonce/toolexec/internal/tracing"
)

// metrics are the gateway's collectors, namespace toolexec_gateway_.
// Keys are never labels (unbounded); routes and status codes are, and the
// tenant is on the admission metrics only (tenant_*): the tenants file
// bounds them (at most maxTenants), and an operator needs to see which
// tenant is refused. A tenant name is the operator's choice, visible to
// whoever may read the metrics.
type metrics struct {
	requests      *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	waiting       prometheus.Gauge
	authFailures  prometheus.Counter
	lookupSeconds prometheus.Histogram
	mcpCalls      *prometheus.CounterVec
	reloads       *prometheus.CounterVec

	tenantAdmitted *prometheus.CounterVec // tenant, kind
	tenantRefused  *prometheus.CounterVec // tenant, kind, limit
	tenantWait     *prometheus.CounterVec // tenant, kind: seconds waited for a slot
	callsInFlight  prometheus.Gauge
}

// What an admission admits: a call (or compensate), or a key lookup.
const (
	kindCall   = "call"
	kindLookup = "lookup"
)

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
			Help: "Reloads of the tenants file (SIGHUP) by result: ok, error (the file has an error), shared_token (it lists a token of the operators file in force); on any but ok the tenants in force stay."}, []string{"result"}),
	}
	m.tenantMetrics()
	if reg != nil {
		reg.MustRegister(m.requests, m.duration, m.waiting, m.authFailures, m.lookupSeconds, m.mcpCalls, m.reloads,
			m.tenantAdmitted, m.tenantRefused, m.tenantWait, m.callsInFlight)
	}
	return m
}

func (m *metrics) tenantMetrics() {
	m.tenantAdmitted = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "toolexec", Subsystem: "gateway", Name: "tenant_admitted_total",
		Help: "Calls (kind call: POST calls, MCP tools/call, compensate) and key lookups (kind lookup: GET, and compensate's look) admitted, by tenant."}, []string{"tenant", "kind"})
	m.tenantRefused = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "toolexec", Subsystem: "gateway", Name: "tenant_refused_total",
		Help: "Calls and key lookups refused with 429 (nothing sent), by tenant and by the limit that refused them (concurrent_calls, calls_per_second, " +
			"gateway_calls_in_flight, tenant_lookups, gateway_lookups)."}, []string{"tenant", "kind", "limit"})
	m.tenantWait = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "toolexec", Subsystem: "gateway", Name: "tenant_queue_wait_seconds_total",
		Help: "Seconds admitted requests waited in the gateway's queue for a slot, by tenant (calls never wait: over a limit they are refused; lookups queue)."}, []string{"tenant", "kind"})
	m.callsInFlight = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "toolexec", Subsystem: "gateway", Name: "calls_in_flight",
		Help: "Calls produced by this instance whose answer has not come yet, all tenants (each tenant's are bounded by its concurrent_calls)."})
}

// admitted counts an admission's verdict: admitted (with its wait),
// refused by a limit, or neither (the caller went away).
func (m *metrics) admitted(tenant, kind string, err error, waited time.Duration) {
	if le, ok := limitOf(err); ok {
		m.tenantRefused.WithLabelValues(tenant, kind, le.Limit).Inc()
		return
	}
	if err == nil {
		m.tenantAdmitted.WithLabelValues(tenant, kind).Inc()
		if waited > 0 {
			m.tenantWait.WithLabelValues(tenant, kind).Add(waited.Seconds())
		}
	}
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
	switch {
	case errors.Is(err, tokenfile.ErrShared):
		g.m.reloads.WithLabelValues("shared_token").Inc()
		return err
	case err != nil:
		g.m.reloads.WithLabelValues("error").Inc()
		return err
	}
	g.m.reloads.WithLabelValues("ok").Inc()
	return nil
}
