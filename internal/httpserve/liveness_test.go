package httpserve

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// clock is a time the test moves by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func body(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
	return w.Code, w.Body.String()
}

// A loop that turns within its bound keeps /healthz ok; one that does not
// makes it 503 with the loop named, until it turns again; a stopped loop
// no longer counts; each loop has its own bound.
func TestLivenessFailsWhileALoopHasNotTurned(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	l := newLivenessAt(c.now)
	tick := func() { l.Beat("executor loop") }
	l.Beat("executor loop") // before it is registered: ignored
	l.Loop("executor loop", time.Minute)
	l.Loop("gateway watch", 10*time.Minute)
	c.add(50 * time.Second)
	tick()
	c.add(50 * time.Second)
	if code, b := body(t, l, "/healthz"); code != http.StatusOK {
		t.Fatalf("turned 50 s ago, bound 1m: %d %s", code, b)
	}
	c.add(20 * time.Second)
	code, b := body(t, l, "/healthz")
	if code != http.StatusServiceUnavailable || !strings.Contains(b, "executor loop has not turned for 1m10s (bound 1m0s)") || strings.Contains(b, "gateway") {
		t.Fatalf("70 s without a turn, bound 1m: %d %q", code, b)
	}
	tick()
	if code, b := body(t, l, "/healthz"); code != http.StatusOK {
		t.Fatalf("after a turn: %d %s", code, b)
	}
	c.add(2 * time.Minute)
	l.Stop("executor loop")
	if code, b := body(t, l, "/healthz"); code != http.StatusOK {
		t.Fatalf("a stopped loop counted: %d %s", code, b)
	}
}

// In a Process, /healthz is the Liveness's answer before and after the
// process's own handler is served, and Restarting takes the other paths
// back to the starting answers.
func TestHandoffAnswersHealthFromTheLiveness(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	s := Starting(prometheus.NewRegistry())
	s.live = newLivenessAt(c.now)
	s.live.Loop("start", time.Minute)
	c.add(2 * time.Minute)
	if code, _ := body(t, s, "/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("a start that has not turned for 2m, while starting: /healthz %d", code)
	}
	s.Serve(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	if code, _ := body(t, s, "/healthz"); code != http.StatusServiceUnavailable {
		t.Fatalf("served: /healthz %d, want the Liveness's 503", code)
	}
	s.live.Stop("start")
	if code, _ := body(t, s, "/healthz"); code != http.StatusOK {
		t.Fatalf("served, no stalled loop: /healthz %d", code)
	}
	if code, _ := body(t, s, "/readyz"); code != http.StatusTeapot {
		t.Fatalf("served: /readyz %d, not the process's handler", code)
	}
	s.Restarting()
	if code, _ := body(t, s, "/readyz"); code != http.StatusServiceUnavailable {
		t.Fatalf("restarting: /readyz %d, want 503", code)
	}
}
