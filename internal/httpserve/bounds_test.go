package httpserve

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serve runs h under Listen's limits with maxConns, and returns its
// address and capped listener.
func serve(t *testing.T, h http.Handler, maxConns int) (string, *capListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := DefaultLimits()
	l.MaxConns = maxConns
	srv, capped := newServer(ln, h, l)
	go func() { _ = srv.Serve(capped) }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().String(), capped
}

// authed marks every request Authenticated, as the gateway does for a
// known token.
var authed = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	Authenticated(r)
	_, _ = io.WriteString(w, "ok")
})

// A bearer token of the largest size a tokens file allows, with a
// traceparent, a tracestate and a key, fits the header bound; a header
// of 64 KiB (which Go's default bound, 1 MiB, would read) is answered 431.
func TestHeaderBound(t *testing.T) {
	addr, _ := serve(t, authed, 16)
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.Header.Set("Authorization", "Bearer "+strings.Repeat("t", 4096))
	req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	req.Header.Set("tracestate", strings.Repeat("v", 512))
	req.Header.Set("Idempotency-Key", `%"`+strings.Repeat("%c3%a9", 128)+`"`)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the largest header a caller needs: %s", resp.Status)
	}
	req.Header.Set("X-Pad", strings.Repeat("p", 64<<10))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a 64 KiB header: %s, want 431", resp.Status)
	}
}

// The answer to a request no handler marked Authenticated closes its
// connection; a marked one's stays open for the next request.
func TestUnauthenticatedConnectionIsClosed(t *testing.T) {
	anon := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "who are you", http.StatusUnauthorized) })
	for name, tc := range map[string]struct {
		h         http.Handler
		keptAlive bool
	}{"unauthenticated": {anon, false}, "authenticated": {authed, true}} {
		t.Run(name, func(t *testing.T) {
			addr, _ := serve(t, tc.h, 16)
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReader(c)
			resp := roundTrip(t, c, br)
			if resp.Close == tc.keptAlive {
				t.Fatalf("answer with Connection: close %v", resp.Close)
			}
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			if err == nil {
				_, err = http.ReadResponse(br, nil)
			}
			if open := err == nil; open != tc.keptAlive {
				t.Fatalf("a second request on the connection: %v", err)
			}
		})
	}
}

// At its cap a listener closes the connection idle for longest to take
// a new one; with none idle it takes none until one ends.
func TestConnectionCap(t *testing.T) {
	block := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		Authenticated(r)
		if r.URL.Path == "/block" {
			<-block
		}
		_, _ = io.WriteString(w, "ok")
	})
	addr, capped := serve(t, h, 2)
	idle1, br1 := dial(t, addr)
	roundTrip(t, idle1, br1)
	idle2, br2 := dial(t, addr)
	roundTrip(t, idle2, br2)
	third, br3 := dial(t, addr)
	roundTrip(t, third, br3) // served: the longest idle made room
	_ = idle1.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := br1.ReadByte(); err == nil {
		t.Fatal("the longest idle connection is still open")
	}
	if n := capped.open(); n > 2 {
		t.Fatalf("%d connections open, cap 2", n)
	}
	busy1, _ := dial(t, addr)
	send(t, busy1, "/block") // idle2 closed to take it
	busy2, _ := dial(t, addr)
	send(t, busy2, "/block") // third closed to take it
	waitOpen(t, capped, 2)
	late, brl := dial(t, addr) // in the backlog: none is idle
	send(t, late, "/")
	_ = late.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := brl.ReadByte(); err == nil {
		t.Fatal("a connection over the cap was served while none was idle")
	}
	close(block) // the busy ones answer and go idle: the late one gets in
	_ = late.SetReadDeadline(time.Now().Add(10 * time.Second))
	if resp, err := http.ReadResponse(brl, nil); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the waiting connection after room was made: %v", err)
	}
}

func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func send(t *testing.T, c net.Conn, path string) {
	t.Helper()
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
		t.Fatal(err)
	}
}

func roundTrip(t *testing.T, c net.Conn, br *bufio.Reader) *http.Response {
	t.Helper()
	send(t, c, "/")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_ = c.SetReadDeadline(time.Time{})
	return resp
}

func waitOpen(t *testing.T, l *capListener, n int) {
	t.Helper()
	for range 5000 {
		if l.open() == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("open connections %d, want %d", l.open(), n)
}

// open is the number of connections open, for tests.
func (l *capListener) open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.conns)
}
