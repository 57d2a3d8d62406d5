package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ledger is a real HTTP tool server that records every request by its
// Idempotency-Key. Paths choose the behaviour:
//
//	/ok      200 with {"ok":true,"n":<calls of this key>,"args":<body>}
//	/fail    400
//	/err503  503
//	/slow    sleeps ?ms= then 200
//	/block   waits until release() (or 30 s), then 200
//	/hang    never answers within any sane timeout (30 s)
type ledger struct {
	srv     *httptest.Server
	release chan struct{}

	mu      sync.Mutex
	calls   map[string]int
	headers map[string]http.Header
	arrived chan string
}

func newLedger(t *testing.T) *ledger {
	l := &ledger{release: make(chan struct{}), calls: map[string]int{}, headers: map[string]http.Header{}, arrived: make(chan string, 1024)}
	l.srv = httptest.NewServer(http.HandlerFunc(l.serve))
	t.Cleanup(func() {
		l.releaseAll()
		l.srv.CloseClientConnections()
		l.srv.Close()
	})
	return l
}

func (l *ledger) url(path string) string { return l.srv.URL + path }

func (l *ledger) releaseAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.release:
	default:
		close(l.release)
	}
}

func (l *ledger) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	key := r.Header.Get("Idempotency-Key")
	l.mu.Lock()
	l.calls[key]++
	n := l.calls[key]
	l.headers[key] = r.Header.Clone()
	l.mu.Unlock()
	select {
	case l.arrived <- key:
	default:
	}
	l.behave(w, r, n, body)
}

func (l *ledger) behave(w http.ResponseWriter, r *http.Request, n int, body []byte) {
	switch r.URL.Path {
	case "/fail":
		http.Error(w, `{"error":"insufficient funds"}`, http.StatusBadRequest)
		return
	case "/err503":
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
		return
	case "/slow":
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		time.Sleep(time.Duration(ms) * time.Millisecond)
	case "/block":
		select {
		case <-l.release:
		case <-time.After(30 * time.Second):
		}
	case "/hang":
		select {
		case <-r.Context().Done():
			return
		case <-time.After(30 * time.Second):
		}
	}
	var args any
	_ = json.Unmarshal(body, &args)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "n": n, "args": args})
}

// downstreamKeys are the Idempotency-Keys the tool server was called
// under: a tool that honours them performs one effect per key.
func (l *ledger) downstreamKeys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k := range l.calls {
		out = append(out, k)
	}
	return out
}

// total is the number of requests the tool server received.
func (l *ledger) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := 0
	for _, n := range l.calls {
		s += n
	}
	return s
}

func (l *ledger) maxPerKey() (string, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var k string
	m := 0
	for key, n := range l.calls {
		if n > m {
			k, m = key, n
		}
	}
	return k, m
}

// headerOf is header for the last request of (tenant, key), whatever its
// downstream key: each call of a key has its own.
func (l *ledger) headerOf(tenant, key, name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, h := range l.headers {
		if h.Get("X-Tool-Tenant") == tenant && h.Get("X-Tool-Key") == key {
			return h.Get(name)
		}
	}
	return ""
}

// callsOf counts the requests of (tenant, key), under every downstream
// key of its calls.
func (l *ledger) callsOf(tenant, key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for dk, h := range l.headers {
		if h.Get("X-Tool-Tenant") == tenant && h.Get("X-Tool-Key") == key {
			n += l.calls[dk]
		}
	}
	return n
}

// waitArrivals waits until n requests have arrived.
func (l *ledger) waitArrivals(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.After(within)
	for i := 0; i < n; i++ {
		select {
		case <-l.arrived:
		case <-deadline:
			t.Fatalf("only %d of %d tool requests arrived within %s", i, n, within)
		}
	}
}

// toolsYAML is a tool file for the ledger: one tool per behaviour.
func (l *ledger) toolsYAML(extra string) string {
	u := l.srv.URL
	return "tools:\n" +
		toolEntry("t.ok", "native_key", u+"/ok", "5s", "") +
		toolEntry("t.irrev", "irreversible", u+"/ok", "5s", "") +
		toolEntry("t.fail", "native_key", u+"/fail", "5s", "") +
		toolEntry("t.block", "irreversible", u+"/block", "40s", "    pending_ttl: 2m\n") +
		toolEntry("t.slow", "irreversible", u+"/slow?ms=1500", "10s", "") +
		toolEntry("t.hang", "probe", u+"/hang", "300ms", "    probe_url: "+u+"/status\n") +
		toolEntry("t.err503", "irreversible", u+"/err503", "5s", "") +
		toolEntry("t.refused", "native_key", "http://127.0.0.1:1/x", "1s", "    retries: 2\n") +
		toolEntry("t.small", "native_key", u+"/ok", "5s", "    max_args_bytes: 64\n") +
		toolEntry("t.roslow", "read_only", u+"/slow?ms=1500", "10s", "") +
		extra
}

func toolEntry(name, class, url, timeout, extra string) string {
	ttl := "    pending_ttl: 1m\n"
	if strings.Contains(extra, "pending_ttl") {
		ttl = ""
	}
	return fmt.Sprintf("  - name: %s\n    class: %s\n    url: %q\n    timeout: %s\n%s    retention: 1h\n%s", name, class, url, timeout, ttl, extra)
}
