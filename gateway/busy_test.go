package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

func busyAnswer(tenant, tool, typ, code string, retryMs int64) *wire.Result {
	return &wire.Result{V: 1, IntentID: "i1", Type: typ, Tenant: tenant, Key: "k1", Tool: tool, Status: codes.StatusNotExecuted,
		Error: &wire.ErrorInfo{Code: code, Message: "tenant " + tenant + " holds its share"}, RetryAfterMs: retryMs}
}

// A refusal of a call for want of a place holds the tenant's calls of the
// tool for its hint, with the executor's code as status and problem code;
// other tenants, other tools, compensations and other answers hold
// nothing; the hold ends with the hint.
func TestBusyHolds(t *testing.T) {
	now := time.Unix(1000, 0)
	h := newBusyHolds()
	h.now = func() time.Time { return now }
	h.note(busyAnswer("acme", "t.slow", wire.TypeCall, codes.ErrOverShare, 1500))
	h.note(busyAnswer("acme", "t.full", wire.TypeCall, codes.ErrQueueFull, 100))
	h.note(busyAnswer("acme", "t.comp", wire.TypeCompensate, codes.ErrOverShare, 5000))
	h.note(&wire.Result{Type: wire.TypeCall, Tenant: "acme", Tool: "t.other", Status: codes.StatusNotExecuted, Error: &wire.ErrorInfo{Code: "connection_refused"}})
	h.note(nil)
	var le *limitError
	if err := h.check("acme", "t.slow"); !errors.As(err, &le) || le.Status != http.StatusTooManyRequests || le.Code != codes.ErrOverShare ||
		le.Limit != limitExecutorShare || le.RetryAfter != 2 || !strings.Contains(le.Detail, "holds its share") {
		t.Fatalf("acme t.slow: %+v", err)
	}
	if err := h.check("acme", "t.full"); !errors.As(err, &le) || le.Status != http.StatusServiceUnavailable || le.Limit != limitExecutorFull || le.RetryAfter != 1 {
		t.Fatalf("acme t.full: %+v", err)
	}
	for _, k := range [][2]string{{"globex", "t.slow"}, {"acme", "t.comp"}, {"acme", "t.other"}} {
		if err := h.check(k[0], k[1]); err != nil {
			t.Fatalf("%s %s held: %v", k[0], k[1], err)
		}
	}
	now = now.Add(1500 * time.Millisecond)
	if err := h.check("acme", "t.slow"); err != nil {
		t.Fatalf("held past its hint: %v", err)
	}
}

// The holds are bounded: past maxBusyHolds a new pair is held only when
// an expired one makes room.
func TestBusyHoldsAreBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	h := newBusyHolds()
	h.now = func() time.Time { return now }
	for i := range maxBusyHolds {
		h.note(busyAnswer(fmt.Sprintf("t%d", i), "tool", wire.TypeCall, codes.ErrOverShare, int64(1000+i)))
	}
	h.note(busyAnswer("late", "tool", wire.TypeCall, codes.ErrOverShare, 60_000))
	if err := h.check("late", "tool"); err != nil {
		t.Fatalf("a pair past the bound was held: %v", err)
	}
	now = now.Add(1500 * time.Millisecond) // the first 501 expired
	h.note(busyAnswer("late", "tool", wire.TypeCall, codes.ErrOverShare, 60_000))
	if err := h.check("late", "tool"); err == nil {
		t.Fatal("with expired holds dropped, the new pair was not held")
	}
	if n := len(h.mu.m); n > maxBusyHolds {
		t.Fatalf("%d holds, the bound is %d", n, maxBusyHolds)
	}
}

// The executor's refusal is answered 429 (over_share) or 503
// (queue_full), Retry-After in whole seconds (at least 1), the problem
// naming the code and the limit and carrying the answer.
func TestWriteBusy(t *testing.T) {
	for _, c := range []struct {
		code   string
		ms     int64
		status int
		ra     string
	}{{codes.ErrOverShare, 1200, 429, "2"}, {codes.ErrQueueFull, 0, 503, "1"}} {
		w := httptest.NewRecorder()
		writeTerminal(w, busyAnswer("acme", "t", wire.TypeCall, c.code, c.ms))
		body := w.Body.String()
		if w.Code != c.status || w.Header().Get("Retry-After") != c.ra || !strings.Contains(body, `"code":"`+c.code+`"`) ||
			!strings.Contains(body, `"limit":"`+busyLimit(c.code)+`"`) || !strings.Contains(body, `"answer":{`) || !strings.Contains(body, `"intent_id":"i1"`) {
			t.Fatalf("%s: %d Retry-After %q %s", c.code, w.Code, w.Header().Get("Retry-After"), body)
		}
	}
}
