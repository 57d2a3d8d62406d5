package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/atmostonce/toolexec/gateway"
	"github.com/atmostonce/toolexec/internal/tracing"
	"github.com/atmostonce/toolexec/topics"
)

// benchToken is the bench tenant's bearer token at the gateway.
const benchToken = "bench-token"

// gatewayMember is the gateway (cmd/gateway's library) in a member
// process, in front of an executor member's topics, so that its CPU time
// and memory are its own.
type gatewayMember struct {
	g   *gateway.Gateway
	ln  net.Listener
	srv *http.Server
	reg *prometheus.Registry
	tr  *hopTracer // --trace; nil otherwise
}

func newGatewayMember(ctx context.Context, o memberOpts) (*gatewayMember, error) {
	reg, err := benchTools(o.slowLatency, o.slowInFlight, o.toolURL)
	if err != nil {
		return nil, err
	}
	tenants, err := memberTenants(o.tenantsFile)
	if err != nil {
		return nil, err
	}
	pr := prometheus.NewRegistry()
	tp, _, err := tracing.FromEnv(ctx, "bench-gateway")
	if err != nil {
		return nil, err
	}
	gc := gateway.Config{Brokers: o.brokers, Prefix: o.prefix, Tools: reg.Specs(), TracerProvider: tp,
		Tenants: gateway.NewTenantStore(tenants), InstanceID: "bench-" + o.group, Registerer: pr, KafkaOpts: kafkaOpts,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	var tr *hopTracer
	if o.trace {
		tr = newHopTracer(map[string]string{topics.NamesWithPrefix(o.prefix).Intents: "intent", gateway.ReplyTopic(o.prefix, gc.InstanceID): "answer"})
		gc.KafkaOpts = append(slices.Clone(kafkaOpts), tr.hooks()...)
	}
	g, err := gateway.New(ctx, gc)
	if err != nil {
		return nil, err
	}
	addr := o.httpAddr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		g.Close()
		return nil, err
	}
	h := g.Handler()
	if tr != nil {
		h = tr.handler(h)
	}
	return &gatewayMember{g: g, ln: ln, srv: &http.Server{Handler: h}, reg: pr, tr: tr}, nil
}

func (m *gatewayMember) tracer() *hopTracer { return m.tr }

// memberTenants are the tenants file's (the flood scenario's), or the
// bench tenant alone with limits no load of the bench reaches: the other
// scenarios measure the gateway's cost, not its admission.
func memberTenants(path string) (*gateway.Tenants, error) {
	if path != "" {
		return gateway.LoadTenants(path)
	}
	return gateway.ParseTenants(fmt.Appendf(nil, "tenants:\n  - name: %s\n    tokens: [%q]\n    limits: {concurrent_calls: 100000, calls_per_second: 0}\n",
		benchTenant, gateway.HashToken(benchToken)))
}

// addr is where the gateway listens; the parent reads it from the ready
// line.
func (m *gatewayMember) addr() string { return m.ln.Addr().String() }

func (m *gatewayMember) run(ctx context.Context) error {
	go func() {
		<-ctx.Done()
		_ = m.srv.Close()
	}()
	if err := m.srv.Serve(m.ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (m *gatewayMember) close() { m.g.Close() }

// counters are the process figures and the requests served.
func (m *gatewayMember) counters() counters { return gathered(m.reg, addGatewayRequests) }

func addGatewayRequests(c *counters, f *dto.MetricFamily) {
	if f.GetName() != "toolexec_gateway_requests_total" {
		return
	}
	for _, mt := range f.GetMetric() {
		c.Intents += mt.GetCounter().GetValue()
	}
}
