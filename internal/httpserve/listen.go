package httpserve

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// Timeouts of every HTTP server of the processes (the gateway's API and
// MCP, health and metrics). Why each: a client that opens connections and
// sends nothing, or trickles a request, must not hold a goroutine and a
// connection for ever.
type Timeouts struct {
	// ReadHeader: a request's headers arrive within this (5 s).
	ReadHeader time.Duration
	// Read: the whole request, body included (30 s: the largest body, 1
	// MiB, at 35 KB/s).
	Read time.Duration
	// Write: from the end of the headers to the end of the answer; above
	// the longest a handler may wait (the gateway's Prefer: wait, at most
	// 60 s, after a produce of at most 10 s), 90 s.
	Write time.Duration
	// Idle: a kept-alive connection with no request is closed (60 s).
	Idle time.Duration
}

// DefaultTimeouts are what Serve applies.
var DefaultTimeouts = Timeouts{ReadHeader: 5 * time.Second, Read: 30 * time.Second, Write: 90 * time.Second, Idle: 60 * time.Second}

// Serve serves h on ln until the returned server is closed, with
// DefaultTimeouts. The caller binds ln (cli.Listen) before anything slow
// starts, so that a port in use fails the start at once and names its
// flag.
func Serve(ln net.Listener, h http.Handler, log *slog.Logger) *http.Server {
	return ServeWith(ln, h, DefaultTimeouts, log)
}

// ServeWith is Serve with the given timeouts.
func ServeWith(ln net.Listener, h http.Handler, t Timeouts, log *slog.Logger) *http.Server {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return srv
}
