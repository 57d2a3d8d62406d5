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
// process's own handler from then on.
//
// Why listen before the start: a start may wait minutes (the executor waits
// up to --broker-outage for its broker, the gateway for its reply topic).
// A liveness probe that finds no listener meanwhile kills a process that
// is only waiting, and the pod ends in CrashLoopBackOff.
//
// Safe for concurrent use.
type Handoff struct {
	early http.Handler
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

func (s *Handoff) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := s.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	s.early.ServeHTTP(w, r)
}

// Process is a process's HTTP side from its first moment: its metrics
// registry, and a server on its --http-addr answering as a starting
// process does until Serve hands it the process's own handler.
type Process struct {
	*Handoff
	Registry *prometheus.Registry
	Server   *http.Server
}

// ServeProcess makes a ProcessRegistry and serves a Starting handler over
// it on ln. Close the Server when the process ends.
func ServeProcess(ln net.Listener, log *slog.Logger) *Process {
	p := &Process{Registry: ProcessRegistry()}
	p.Handoff = Starting(p.Registry)
	p.Server = Serve(ln, p.Handoff, log)
	return p
}
