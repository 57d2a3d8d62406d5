package httpserve

import (
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Handoff answers for a process from the moment it listens: while the
// process starts, /healthz is ok, /readyz is 503 and /metrics serves reg;
// any other path is 503 "starting". Serve hands every request to the
// process's own handler from then on, and Restarting takes them back
// while the process starts its work again. With a Liveness, /healthz is
// always the Liveness's answer, whoever serves the rest.
//
// Why listen before the start: a start may wait minutes (the executor waits
// up to --broker-outage for its broker, the gateway for its reply topic).
// A liveness probe that finds no listener meanwhile kills a process that
// is only waiting, and the pod ends in CrashLoopBackOff.
//
// Safe for concurrent use.
type Handoff struct {
	early http.Handler
	live  *Liveness
	h     atomic.Pointer[http.Handler]
}

// Starting returns a Handoff that answers as a starting process does.
func Starting(reg *prometheus.Registry) *Handoff {
	mux := Health(reg, func() bool { return false })
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "starting", http.StatusServiceUnavailable)
	})
	return &Handoff{early: mux}
}

// Serve makes h answer every request from now on.
func (s *Handoff) Serve(h http.Handler) { s.h.Store(&h) }

// Restarting answers as a starting process again (/readyz 503) until the
// next Serve: the process stopped its work and starts it anew (the
// executor after a broker outage outlasted its transaction).
func (s *Handoff) Restarting() { s.h.Store(nil) }

func (s *Handoff) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.live != nil && r.URL.Path == "/healthz" {
		s.live.ServeHTTP(w, r)
		return
	}
	if h := s.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	s.early.ServeHTTP(w, r)
}

// Process is a process's HTTP side from its first moment: its metrics
// registry, the liveness of its loops (its /healthz), and a server on its
// --http-addr answering as a starting process does until Serve hands it
// the process's own handler.
type Process struct {
	*Handoff
	Registry *prometheus.Registry
	Live     *Liveness
	Server   *http.Server
}

// ServeProcess makes a ProcessRegistry and a Liveness and serves a
// Starting handler over them on ln. Close the Server when the process
// ends.
func ServeProcess(ln net.Listener, log *slog.Logger) *Process {
	p := &Process{Registry: ProcessRegistry(), Live: NewLiveness()}
	p.Handoff = Starting(p.Registry)
	p.Handoff.live = p.Live
	p.Server = Serve(ln, p.Handoff, log)
	return p
}

// ServeProcessApart is ServeProcess for a process whose /metrics must not
// be served where its callers are (the gateway's: its exemplars carry
// the trace ids of calls, and its series name tenants): ln answers
// /healthz and /readyz and then the process's handler, never /metrics;
// metricsLn (nil: none) answers /metrics, /healthz and /readyz. Both share
// the registry and the liveness.
func ServeProcessApart(ln, metricsLn net.Listener, log *slog.Logger) (api, metrics *Process) {
	reg, live := ProcessRegistry(), NewLiveness()
	api = &Process{Registry: reg, Live: live, Handoff: Starting(nil)}
	api.Handoff.live = live
	api.Server = Serve(ln, api.Handoff, log)
	metrics = &Process{Registry: reg, Live: live}
	if metricsLn != nil {
		metrics.Handoff = Starting(reg)
		metrics.Handoff.live = live
		metrics.Server = Serve(metricsLn, metrics.Handoff, log)
	}
	return api, metrics
}
