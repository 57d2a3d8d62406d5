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

// MaxHeaderBytes bounds a request's line and header fields; a larger one
// is answered 431 and its connection closed. Why 16 KiB: the largest
// header a caller of ours needs is a bearer token (at most 4 KiB,
// tokenfile.MaxTokenBytes) with a traceparent (55 bytes), a tracestate
// (at most 512), an Idempotency-Key (at most 771 as a display string) and
// a session cookie: 16 KiB holds them three times over. Go's default, 1
// MiB, let 400 connections trickling 1 MB headers take 900 MB.
const MaxHeaderBytes = 16 << 10

// Limits are a server's timeouts and bounds.
type Limits struct {
	Timeouts
	// MaxConns caps the listener's open connections (DefaultMaxConns):
	// at the cap, the longest idle is closed to make room, and with none
	// idle nothing more is accepted until one closes.
	MaxConns int
	// MaxHeaderBytes bounds a request's header (MaxHeaderBytes).
	MaxHeaderBytes int
}

// DefaultLimits are what Serve applies.
func DefaultLimits() Limits {
	return Limits{Timeouts: DefaultTimeouts, MaxConns: DefaultMaxConns(), MaxHeaderBytes: MaxHeaderBytes}
}

// Serve serves h on ln until the returned server is closed, with
// DefaultLimits. The caller binds ln (cli.Listen) before anything slow
// starts, so that a port in use fails the start at once and names its
// flag. The connection of a request that no handler marked Authenticated
// is closed after its answer.
func Serve(ln net.Listener, h http.Handler, log *slog.Logger) *http.Server {
	return ServeLimited(ln, h, DefaultLimits(), log)
}

// ServeLimited is Serve with the given limits.
func ServeLimited(ln net.Listener, h http.Handler, l Limits, log *slog.Logger) *http.Server {
	srv, capped := newServer(ln, h, l)
	go func() {
		if err := srv.Serve(capped); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "addr", ln.Addr().String(), "err", err)
		}
	}()
	return srv
}

// newServer is the server of Serve, and its capped listener over ln.
func newServer(ln net.Listener, h http.Handler, l Limits) (*http.Server, *capListener) {
	capped := newCapListener(ln, l.MaxConns)
	t := l.Timeouts
	srv := &http.Server{Handler: closeUnauthenticated(h), ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write,
		IdleTimeout: t.Idle, MaxHeaderBytes: l.MaxHeaderBytes, ConnState: capped.track}
	return srv, capped
}
