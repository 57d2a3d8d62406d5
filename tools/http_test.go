package tools

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/codes"
)

// seen is one request as the test server saw it.
type seen struct {
	method string
	header http.Header
	body   []byte
}

// toolServer is an httptest server that records requests and answers with
// handle(n), n counting requests from 1.
type toolServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newToolServer(t *testing.T, handle func(n int, w http.ResponseWriter, r *http.Request)) *toolServer {
	t.Helper()
	ts := &toolServer{}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts.mu.Lock()
		ts.reqs = append(ts.reqs, seen{method: r.Method, header: r.Header.Clone(), body: body})
		n := len(ts.reqs)
		ts.mu.Unlock()
		handle(n, w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *toolServer) requests() []seen {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]seen(nil), ts.reqs...)
}

// answer writes status and body.
func answer(status int, body string) func(int, http.ResponseWriter, *http.Request) {
	return func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// testSpec is a valid spec for url with small timeouts.
func testSpec(class Class, url string) Spec {
	s := Spec{Name: "t.tool", Class: class, URL: url, Timeout: 200 * time.Millisecond, Retries: 3}
	if class == Probe {
		s.ProbeURL = url + "/status"
	}
	if class == Compensatable {
		s.CompensateWith = "t.undo"
	}
	return s.withDefaults()
}

// newTestHTTP returns the adapter with a no-op sleep counting its calls.
func newTestHTTP(spec Spec, client *http.Client) (*HTTP, *atomic.Int32) {
	h := newHTTP(spec, client)
	var sleeps atomic.Int32
	h.sleep = func(ctx context.Context, _ time.Duration) error {
		sleeps.Add(1)
		return ctx.Err()
	}
	return h, &sleeps
}

func testRequest() Request {
	return Request{
		Tenant: "acme", Key: "intent-1", Tool: "t.tool",
		DownstreamKey: "tk2_0123456789abcdef0123456789abcdef01234567",
		Args:          map[string]any{"amount": 12.5, "to": "bob", "tags": []any{"a", "b"}},
	}
}

// refusedURL returns the URL of a port nothing listens on.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// hangUntilGone blocks until the client goes away (or 5s).
func hangUntilGone(_ int, _ http.ResponseWriter, r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-time.After(5 * time.Second):
	}
}

func checkOutcome(t *testing.T, got Outcome, st Status, code string, attempts int) {
	t.Helper()
	if got.Status != st || got.Code != code || got.Attempts != attempts {
		t.Errorf("outcome = %v %q attempts=%d (%s), want %v %q attempts=%d",
			got.Status, got.Code, got.Attempts, got.Message, st, code, attempts)
	}
}

// checkSameKey checks that every request carried want as Idempotency-Key.
func checkSameKey(t *testing.T, reqs []seen, want string) {
	t.Helper()
	for i, r := range reqs {
		if got := r.header.Get("Idempotency-Key"); got != want {
			t.Errorf("request %d Idempotency-Key = %q, want %q", i+1, got, want)
		}
	}
}

func TestHTTPSuccess(t *testing.T) {
	ts := newToolServer(t, answer(200, `{"id":"r1","n":3}`))
	h, _ := newTestHTTP(testSpec(Irreversible, ts.URL), nil)
	req := testRequest()
	req.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req.Tracestate = "vendor=abc,other=1"
	out := h.Invoke(context.Background(), req)
	checkOutcome(t, out, Succeeded, "", 1)
	if want := map[string]any{"id": "r1", "n": int64(3)}; !reflect.DeepEqual(out.Result, want) {
		t.Errorf("Result = %#v, want %#v", out.Result, want)
	}
	reqs := ts.requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	var body map[string]any
	if err := json.Unmarshal(r.body, &body); err != nil || !reflect.DeepEqual(body, req.Args) {
		t.Errorf("body = %s (%v), want args %v", r.body, err, req.Args)
	}
	wantHeaders := map[string]string{
		"Idempotency-Key": req.DownstreamKey, "Content-Type": "application/json",
		"Traceparent": req.Traceparent, "Tracestate": req.Tracestate, "X-Tool-Tenant": "acme", "X-Tool-Key": "intent-1",
	}
	for k, v := range wantHeaders {
		if got := r.header.Get(k); got != v {
			t.Errorf("header %s = %q, want %q", k, got, v)
		}
	}
	if r.method != http.MethodPost {
		t.Errorf("method = %s", r.method)
	}
}

func TestHTTPNoTraceparent(t *testing.T) {
	ts := newToolServer(t, answer(200, `{}`))
	h, _ := newTestHTTP(testSpec(ReadOnly, ts.URL), nil)
	req := testRequest()
	req.Tracestate = "vendor=abc" // never without a traceparent
	h.Invoke(context.Background(), req)
	for _, name := range []string{"Traceparent", "Tracestate"} {
		if _, ok := ts.requests()[0].header[name]; ok {
			t.Errorf("%s sent without a traceparent", name)
		}
	}
}

func TestHTTPSuccessBodies(t *testing.T) {
	tests := []struct {
		body string
		want any
	}{
		{"", nil},
		{"  \n", nil},
		{`[1,"x"]`, []any{int64(1), "x"}},
		{`{"big":9007199254740993,"f":1.5}`, map[string]any{"big": int64(9007199254740993), "f": 1.5}},
		{"plain text", "plain text"},
		{`{"a":1} trailing`, `{"a":1} trailing`},
	}
	for _, tc := range tests {
		ts := newToolServer(t, answer(201, tc.body))
		h, _ := newTestHTTP(testSpec(Irreversible, ts.URL), nil)
		out := h.Invoke(context.Background(), testRequest())
		checkOutcome(t, out, Succeeded, "", 1)
		if !reflect.DeepEqual(out.Result, tc.want) {
			t.Errorf("body %q: Result = %#v, want %#v", tc.body, out.Result, tc.want)
		}
	}
}

func TestHTTPStatuses(t *testing.T) {
	tests := []struct {
		name     string
		class    Class
		status   int
		want     Status
		code     string
		attempts int
	}{
		{"400 is definite", NativeKey, 400, Failed, "http_400", 1},
		{"404 is definite", Irreversible, 404, Failed, "http_404", 1},
		{"409 is definite", Probe, 409, Failed, "http_409", 1},
		{"503 irreversible not retried", Irreversible, 503, Unknown, "http_503", 1},
		{"500 probe not retried", Probe, 500, Unknown, "http_500", 1},
		{"503 native_key retried", NativeKey, 503, Unknown, "http_503", 4},
		{"408 is unknown", Irreversible, 408, Unknown, "http_408", 1},
		{"408 native_key retried", NativeKey, 408, Unknown, "http_408", 4},
		{"429 retried then not executed", Irreversible, 429, NotExecuted, "http_429", 4},
		{"429 native_key", NativeKey, 429, NotExecuted, "http_429", 4},
		{"307 not followed", Irreversible, 307, Unknown, "http_307", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newToolServer(t, func(_ int, w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Location", "/elsewhere")
				w.WriteHeader(tc.status)
				io.WriteString(w, "the reason"+strings.Repeat("!", 2000))
			})
			h, sleeps := newTestHTTP(testSpec(tc.class, ts.URL), nil)
			out := h.Invoke(context.Background(), testRequest())
			checkOutcome(t, out, tc.want, tc.code, tc.attempts)
			if n := len(ts.requests()); n != tc.attempts {
				t.Errorf("server saw %d requests, want %d", n, tc.attempts)
			}
			if int(sleeps.Load()) != tc.attempts-1 {
				t.Errorf("slept %d times, want %d", sleeps.Load(), tc.attempts-1)
			}
			if !strings.HasPrefix(out.Message, "the reason") || len(out.Message) != MaxMessageBytes {
				t.Errorf("Message = %.20q… (%d bytes), want the first %d bytes of the body", out.Message, len(out.Message), MaxMessageBytes)
			}
			checkSameKey(t, ts.requests(), testRequest().DownstreamKey)
		})
	}
}

func TestHTTPNativeKeyRetryThenSuccess(t *testing.T) {
	ts := newToolServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			answer(503, "busy")(n, w, r)
			return
		}
		answer(200, `{"ok":true}`)(n, w, r)
	})
	h, _ := newTestHTTP(testSpec(NativeKey, ts.URL), nil)
	out := h.Invoke(context.Background(), testRequest())
	checkOutcome(t, out, Succeeded, "", 2)
	reqs := ts.requests()
	checkSameKey(t, reqs, testRequest().DownstreamKey)
	if len(reqs) != 2 || string(reqs[0].body) != string(reqs[1].body) {
		t.Errorf("requests = %d, bodies differ or missing", len(reqs))
	}
}

func TestHTTPNativeKeyRetryThenFailure(t *testing.T) {
	ts := newToolServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			answer(502, "")(n, w, r)
			return
		}
		answer(422, "no")(n, w, r)
	})
	h, _ := newTestHTTP(testSpec(NativeKey, ts.URL), nil)
	checkOutcome(t, h.Invoke(context.Background(), testRequest()), Failed, "http_422", 2)
}

func TestHTTPTimeoutAfterSend(t *testing.T) {
	tests := []struct {
		class    Class
		attempts int
	}{
		{Probe, 1}, {Irreversible, 1}, {Compensatable, 1}, {ReadOnly, 4}, {NativeKey, 4},
	}
	for _, tc := range tests {
		t.Run(string(tc.class), func(t *testing.T) {
			ts := newToolServer(t, hangUntilGone)
			spec := testSpec(tc.class, ts.URL)
			spec.Timeout = 50 * time.Millisecond
			h, _ := newTestHTTP(spec, nil)
			out := h.Invoke(context.Background(), testRequest())
			checkOutcome(t, out, Unknown, CodeTimeout, tc.attempts)
			if n := len(ts.requests()); n != tc.attempts {
				t.Errorf("server saw %d requests, want %d", n, tc.attempts)
			}
			checkSameKey(t, ts.requests(), testRequest().DownstreamKey)
		})
	}
}

func TestHTTPRefused(t *testing.T) {
	for _, class := range []Class{Irreversible, NativeKey} {
		spec := testSpec(class, refusedURL(t))
		h, sleeps := newTestHTTP(spec, nil)
		out := h.Invoke(context.Background(), testRequest())
		checkOutcome(t, out, NotExecuted, CodeConnectionRefused, spec.Retries+1)
		if int(sleeps.Load()) != spec.Retries {
			t.Errorf("%s: slept %d times, want %d", class, sleeps.Load(), spec.Retries)
		}
	}
}

func TestHTTPZeroRetries(t *testing.T) {
	spec := testSpec(NativeKey, refusedURL(t))
	spec.Retries = 0
	h, _ := newTestHTTP(spec, nil)
	checkOutcome(t, h.Invoke(context.Background(), testRequest()), NotExecuted, CodeConnectionRefused, 1)
}

// dialClient is a client whose dials fail with dial.
func dialClient(dial func(ctx context.Context) error) *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return nil, dial(ctx)
	}}
	return &http.Client{Transport: tr}
}

func TestHTTPNotReachedCodes(t *testing.T) {
	tests := []struct {
		name string
		dial func(ctx context.Context) error
		code string
	}{
		{"dns", func(context.Context) error {
			return &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x.invalid", IsNotFound: true}}
		}, CodeDNS},
		{"dial timeout", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, CodeDialTimeout},
		{"other", func(context.Context) error { return errors.New("no route") }, CodeConnect},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec(Irreversible, "http://tool.test/x")
			spec.Timeout = 30 * time.Millisecond
			h, _ := newTestHTTP(spec, dialClient(tc.dial))
			checkOutcome(t, h.Invoke(context.Background(), testRequest()), NotExecuted, tc.code, spec.Retries+1)
		})
	}
}

func TestHTTPTLSFailureNotExecuted(t *testing.T) {
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("handler reached despite an untrusted certificate")
	}))
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshake errors are expected
	ts.StartTLS()
	defer ts.Close()
	// A handshake under -race on a loaded machine can take longer than the
	// 200 ms the other tests give an attempt; it must end in the TLS
	// error, not in a dial timeout.
	spec := testSpec(Irreversible, ts.URL)
	spec.Timeout = 3 * time.Second
	h, _ := newTestHTTP(spec, nil)
	checkOutcome(t, h.Invoke(context.Background(), testRequest()), NotExecuted, CodeTLS, 4)
}

// hijackClose drops the connection after reading the request: the tool
// got the request and no answer comes back.
func hijackClose(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

// On a reused keep-alive connection net/http would transparently re-send a
// POST carrying an Idempotency-Key; the adapter must not let it.
func TestHTTPResetAfterSendNoTransparentReplay(t *testing.T) {
	tests := []struct {
		class    Class
		want     Status
		attempts int
		hits     int
	}{
		{Irreversible, Unknown, 1, 2},
		{NativeKey, Succeeded, 2, 3},
	}
	for _, tc := range tests {
		t.Run(string(tc.class), func(t *testing.T) {
			ts := newToolServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
				if n == 2 {
					hijackClose(w)
					return
				}
				answer(200, `{}`)(n, w, r)
			})
			h, _ := newTestHTTP(testSpec(tc.class, ts.URL), nil)
			checkOutcome(t, h.Invoke(context.Background(), testRequest()), Succeeded, "", 1) // warms the pool
			out := h.Invoke(context.Background(), testRequest())
			code := ""
			if tc.want == Unknown {
				code = CodeReset
			}
			checkOutcome(t, out, tc.want, code, tc.attempts)
			if n := len(ts.requests()); n != tc.hits {
				t.Errorf("server saw %d requests, want %d", n, tc.hits)
			}
		})
	}
}

func TestHTTPCancelled(t *testing.T) {
	t.Run("before", func(t *testing.T) {
		ts := newToolServer(t, answer(200, "{}"))
		h, _ := newTestHTTP(testSpec(NativeKey, ts.URL), nil)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		checkOutcome(t, h.Invoke(ctx, testRequest()), NotExecuted, CodeCancelled, 0)
		if n := len(ts.requests()); n != 0 {
			t.Errorf("server saw %d requests", n)
		}
	})
	t.Run("while connecting", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		h, _ := newTestHTTP(testSpec(Irreversible, "http://tool.test/x"), dialClient(func(dctx context.Context) error {
			cancel()
			<-dctx.Done()
			return dctx.Err()
		}))
		checkOutcome(t, h.Invoke(ctx, testRequest()), NotExecuted, CodeCancelled, 1)
	})
	t.Run("after send", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		ts := newToolServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
			cancel()
			hangUntilGone(n, w, r)
		})
		h, _ := newTestHTTP(testSpec(NativeKey, ts.URL), nil)
		checkOutcome(t, h.Invoke(ctx, testRequest()), Unknown, CodeCancelled, 1)
	})
	t.Run("during backoff", func(t *testing.T) {
		h := newHTTP(testSpec(Irreversible, refusedURL(t)), nil)
		ctx, cancel := context.WithCancel(context.Background())
		h.sleep = func(ctx context.Context, _ time.Duration) error { cancel(); return ctx.Err() }
		out := h.Invoke(ctx, testRequest())
		checkOutcome(t, out, NotExecuted, CodeCancelled, 1)
		if !strings.Contains(out.Message, CodeConnectionRefused) {
			t.Errorf("Message %q does not tell the last attempt's code", out.Message)
		}
	})
}

func TestHTTPResponseTooLarge(t *testing.T) {
	big := `"` + strings.Repeat("x", maxResponseBytes) + `"`
	ts := newToolServer(t, answer(200, big))
	// An attempt must have time to read 1 MiB under -race on a loaded
	// machine: with testSpec's 200 ms, attempts timed out and were retried
	// before one read far enough to see the size.
	spec := testSpec(NativeKey, ts.URL)
	spec.Timeout = 10 * time.Second
	h, _ := newTestHTTP(spec, nil)
	checkOutcome(t, h.Invoke(context.Background(), testRequest()), Unknown, CodeResponseTooLarge, 1)
}

func TestHTTPRefusesBeforeSending(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Request)
		code string
	}{
		{"no key", func(r *Request) { r.DownstreamKey = "" }, CodeBadRequest},
		{"key with newline", func(r *Request) { r.DownstreamKey = "a\nb" }, CodeBadRequest},
		{"args not JSON", func(r *Request) { r.Args = map[string]any{"f": func() {}} }, CodeBadRequest},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := newToolServer(t, answer(200, "{}"))
			spec := testSpec(NativeKey, ts.URL)
			spec.MaxArgsBytes = 100
			h, _ := newTestHTTP(spec, nil)
			req := testRequest()
			tc.edit(&req)
			checkOutcome(t, h.Invoke(context.Background(), req), NotExecuted, tc.code, 0)
			if n := len(ts.requests()); n != 0 {
				t.Errorf("server saw %d requests", n)
			}
		})
	}
}

func TestHTTPNilArgsAndOddHeaders(t *testing.T) {
	ts := newToolServer(t, answer(200, "{}"))
	h, _ := newTestHTTP(testSpec(ReadOnly, ts.URL), nil)
	req := testRequest()
	req.Args, req.Key, req.Traceparent = nil, "line\nbreak é", "bad\ntrace"
	checkOutcome(t, h.Invoke(context.Background(), req), Succeeded, "", 1)
	r := ts.requests()[0]
	if string(r.body) != "{}" {
		t.Errorf("body = %s, want {}", r.body)
	}
	if got := r.header.Get("X-Tool-Key"); got != "line%0Abreak+%C3%A9" {
		t.Errorf("X-Tool-Key = %q", got)
	}
	if _, ok := r.header["Traceparent"]; ok {
		t.Error("invalid traceparent forwarded")
	}
}

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// refusingTransport fails every request as refused, as if after taking the
// whole timeout, and records when each attempt started.
type refusingTransport struct {
	clock   *fakeClock
	took    time.Duration
	mu      sync.Mutex
	started []time.Time
}

func (rt *refusingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.started = append(rt.started, rt.clock.Now())
	rt.mu.Unlock()
	rt.clock.Advance(rt.took)
	return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
}

// Retries stop before an attempt could outlive pending_ttl.
func TestHTTPPendingTTLBudget(t *testing.T) {
	spec := testSpec(Irreversible, "http://tool.test/x")
	spec.Timeout, spec.PendingTTL, spec.Retries = time.Second, 3*time.Second, 20
	clock := &fakeClock{now: time.Unix(0, 0)}
	rt := &refusingTransport{clock: clock, took: spec.Timeout}
	h := newHTTP(spec, &http.Client{Transport: rt})
	h.now = clock.Now
	h.sleep = func(_ context.Context, d time.Duration) error { clock.Advance(d); return nil }
	out := h.Invoke(context.Background(), testRequest())
	if out.Status != NotExecuted || out.Code != CodeConnectionRefused || out.Attempts != len(rt.started) {
		t.Errorf("outcome = %+v after %d round trips", out, len(rt.started))
	}
	if out.Attempts < 2 || out.Attempts > 3 {
		t.Errorf("Attempts = %d, want 2 or 3 within a 3s budget of 1s attempts", out.Attempts)
	}
	for i, s := range rt.started {
		if end := s.Add(spec.Timeout).Sub(time.Unix(0, 0)); end > spec.PendingTTL {
			t.Errorf("attempt %d could end at %v, after pending_ttl %v", i+1, end, spec.PendingTTL)
		}
	}
	if !strings.Contains(out.Message, "pending_ttl") {
		t.Errorf("Message %q does not mention the budget", out.Message)
	}
}

func TestHTTPMaxInFlight(t *testing.T) {
	release := make(chan struct{})
	ts := newToolServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		<-release
		answer(200, "{}")(n, w, r)
	})
	spec := testSpec(Irreversible, ts.URL)
	// 500 ms of budget to start an attempt: the second call waits that long
	// for the slot. Less (it was 100 ms) let a loaded machine spend the
	// budget before the slot was even tried (pending_ttl_spent).
	spec.MaxInFlight, spec.Timeout, spec.PendingTTL = 1, 2*time.Second, 2500*time.Millisecond
	h, _ := newTestHTTP(spec, nil)
	first := make(chan Outcome)
	go func() { first <- h.Invoke(context.Background(), testRequest()) }()
	for len(ts.requests()) == 0 {
		time.Sleep(time.Millisecond)
	}
	checkOutcome(t, h.Invoke(context.Background(), testRequest()), NotExecuted, CodeOverloaded, 0)
	close(release)
	checkOutcome(t, <-first, Succeeded, "", 1)
	checkOutcome(t, h.Invoke(context.Background(), testRequest()), Succeeded, "", 1)
}

func TestBackoffBounds(t *testing.T) {
	for n := 1; n <= 25; n++ {
		full := min(backoffStart<<min(n-1, 10), backoffCap)
		for range 50 {
			if d := backoff(n); d < full/2 || d > full {
				t.Fatalf("backoff(%d) = %v, want within [%v, %v]", n, d, full/2, full)
			}
		}
	}
}

func TestSleepCtx(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleepCtx(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("sleepCtx on cancelled ctx = %v", err)
	}
	if err := sleepCtx(context.Background(), time.Millisecond); err != nil {
		t.Errorf("sleepCtx = %v", err)
	}
}

// The pending budget runs from when the call was decided, not from when
// Invoke began: a call that waited in the executor's queue past its budget
// is not sent at all, since the reconciler may already have probed the key
// and found nothing (the chaos harness: effects of keys the log said were
// not executed). Found budget left: it is sent.
func TestHTTPBudgetFromDecision(t *testing.T) {
	ts := newToolServer(t, answer(200, "{}"))
	spec := testSpec(Irreversible, ts.URL)
	spec.Timeout, spec.PendingTTL = time.Second, 3*time.Second
	h, _ := newTestHTTP(spec, nil)
	late := testRequest()
	late.Decided = time.Now().Add(-2500 * time.Millisecond)
	checkOutcome(t, h.Invoke(context.Background(), late), NotExecuted, CodeBudgetSpent, 0)
	if n := len(ts.requests()); n != 0 {
		t.Fatalf("a call past its budget reached the tool (%d requests)", n)
	}
	inTime := testRequest()
	inTime.Decided = time.Now().Add(-1500 * time.Millisecond)
	checkOutcome(t, h.Invoke(context.Background(), inTime), Succeeded, "", 1)
	if n := len(ts.requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

// newHTTP is OpenHTTP for a spec known to load; it panics when OpenHTTP
// fails.
func newHTTP(spec Spec, client *http.Client) *HTTP {
	h, err := OpenHTTP(spec, client)
	if err != nil {
		panic(err)
	}
	return h
}

// Numbers cross to and from the tool exactly: an integral float beyond
// 2^53 goes out as its exact value in exponent form, never as digits a
// reader takes for another integer; a result's integers up to 2^64-1 come
// back exact, and one beyond 64 bits, which the wire cannot carry, leaves
// the call succeeded with its result not kept (result_not_stored), not
// stored as another number.
func TestHTTPNumbersBothWays(t *testing.T) {
	ts := newToolServer(t, answer(200, `{"max":18446744073709551615,"neg":-9223372036854775808}`))
	h, _ := newTestHTTP(testSpec(Irreversible, ts.URL), nil)
	req := testRequest()
	req.Args = map[string]any{"two65": 0x1p65, "small": 1.5}
	out := h.Invoke(context.Background(), req)
	checkOutcome(t, out, Succeeded, "", 1)
	if body := string(ts.requests()[0].body); body != `{"small":1.5,"two65":3.6893488147419103232e+19}` {
		t.Errorf("the tool received %s", body)
	}
	if want := map[string]any{"max": uint64(math.MaxUint64), "neg": int64(math.MinInt64)}; !reflect.DeepEqual(out.Result, want) {
		t.Errorf("Result = %#v, want %#v", out.Result, want)
	}
	ts = newToolServer(t, answer(200, `{"n":36893488147419103232}`))
	h, _ = newTestHTTP(testSpec(Irreversible, ts.URL), nil)
	out = h.Invoke(context.Background(), testRequest())
	if out.Status != Succeeded || out.Code != codes.ErrResultNotStored || out.Result != nil || !strings.Contains(out.Message, "36893488147419103232") {
		t.Fatalf("a result beyond 64 bits: %+v", out)
	}
}
