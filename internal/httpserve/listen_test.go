package httpserve

import (
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"
)

// A client that trickles its request is cut off: it cannot hold a
// connection and a goroutine of the server for ever.
func TestSlowRequestIsCutOff(t *testing.T) {
	ln := listen(t)
	addr := ln.Addr().String()
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) })
	srv := ServeWith(ln, h, Timeouts{ReadHeader: time.Second, Read: 300 * time.Millisecond, Write: time.Second, Idle: time.Second}, slog.Default())
	defer srv.Close()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nab"); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	start := time.Now()
	_, err = io.ReadAll(c) // the server closes the connection
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server held a trickling request for %s", time.Since(start))
	}
}

func TestListenSetsEveryTimeout(t *testing.T) {
	srv := Serve(listen(t), http.NotFoundHandler(), slog.Default())
	defer srv.Close()
	if srv.ReadHeaderTimeout == 0 || srv.ReadTimeout == 0 || srv.WriteTimeout == 0 || srv.IdleTimeout == 0 {
		t.Fatalf("timeouts %s %s %s %s: a zero one lets a client hold a connection for ever",
			srv.ReadHeaderTimeout, srv.ReadTimeout, srv.WriteTimeout, srv.IdleTimeout)
	}
}

// listen binds a free loopback port; the server closes it.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// ServeWith is Serve with the given timeouts.
func ServeWith(ln net.Listener, h http.Handler, t Timeouts, log *slog.Logger) *http.Server {
	l := DefaultLimits()
	l.Timeouts = t
	return ServeLimited(ln, h, l, log)
}
