package tools

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/atmostonce/toolexec/wire"
)

// maxResponseBytes bounds the body read from a tool or probe.
const maxResponseBytes = 1 << 20

// HTTP is the adapter for tools reached over HTTP. It is safe for
// concurrent use. Invoke blocks until the call, with its retries, is done.
type HTTP struct {
	spec   Spec
	cred   *credentials // expanded headers, TLS, redaction of the secrets
	client *http.Client
	slots  chan struct{} // bounds concurrent Invokes to spec.MaxInFlight
	// sleep waits between attempts; replaced in tests.
	sleep func(ctx context.Context, d time.Duration) error
	now   func() time.Time
}

// OpenHTTP returns the adapter for spec, which should have been validated
// (zero fields get defaults, see Spec). It expands the references of
// spec.Headers and reads spec.TLS's files now: a missing variable or file
// is an error naming the tool and the field. A nil client gets a
// dedicated client whose Transport has sane timeouts, HTTP/1.1 only, a
// connection pool sized to MaxInFlight and spec.TLS. A given client is
// copied and the copy never follows redirects (see refuseRedirect); its
// Transport is shared, so a spec with TLS files cannot take one.
func OpenHTTP(spec Spec, client *http.Client) (*HTTP, error) {
	spec = spec.withDefaults()
	cred, err := loadCredentials(spec)
	if err != nil {
		return nil, err
	}
	if client != nil && cred.tls != nil {
		return nil, credErr(spec, "tls", "cannot apply to a given *http.Client; give none")
	}
	return &HTTP{
		spec:   spec,
		cred:   cred,
		client: clientFor(spec, client, cred.tls),
		slots:  make(chan struct{}, max(spec.MaxInFlight, 1)),
		sleep:  sleepCtx,
		now:    time.Now,
	}, nil
}

// Spec returns the spec the adapter was built with, defaults applied.
func (h *HTTP) Spec() Spec { return h.spec }

func clientFor(spec Spec, c *http.Client, tc *tls.Config) *http.Client {
	if c == nil {
		t := newTransport(spec)
		t.TLSClientConfig = tc
		return &http.Client{Transport: t, CheckRedirect: refuseRedirect}
	}
	cp := *c
	cp.CheckRedirect = refuseRedirect
	return &cp
}

// refuseRedirect stops the client at a 3xx. Why: following a 307/308 re-sends
// the POST elsewhere, a second execution we could not account for; the 3xx
// is returned as is and becomes Unknown.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// newTransport builds the dedicated Transport. The per-attempt deadline
// comes from the request context; the timeouts here are backstops.
//
// Why HTTP/1.1 only: HTTP/2 brings its own transparent retries (GOAWAY,
// refused streams) and connection coalescing; with HTTP/1.1 the only
// replays net/http may do are the ones replayGuard lets through.
func newTransport(spec Spec) *http.Transport {
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	return &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxIdleConns:           spec.MaxInFlight,
		MaxIdleConnsPerHost:    spec.MaxInFlight,
		MaxConnsPerHost:        spec.MaxInFlight,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      false,
		Protocols:              protocols,
	}
}

// Invoke POSTs req.Args to the tool and retries what is safe to retry (see
// the package doc). It never starts an attempt that could end later than
// PendingTTL after req.Decided (or after Invoke began), and waits at most
// that long for one of the MaxInFlight slots. It honours ctx: cancelled
// before a connection existed gives NotExecuted "cancelled", after gives
// Unknown.
func (h *HTTP) Invoke(ctx context.Context, req Request) Outcome {
	start := h.now()
	if !req.Decided.IsZero() && req.Decided.Before(start) {
		start = req.Decided
	}
	body, out, ok := h.prepare(ctx, req)
	if !ok {
		return out
	}
	if h.startBudget(start) < 0 {
		// Why: a call that waited in a queue (or in a paused process)
		// past its budget could land after the reconciler has probed
		// and found nothing, then act on a key already settled as not
		// executed: an effect of a key the log says was not executed, or
		// a second effect.
		return outcome(NotExecuted, CodeBudgetSpent, fmt.Sprintf("decided %v ago, pending_ttl is %v", h.now().Sub(start).Round(time.Millisecond), h.spec.PendingTTL))
	}
	release, out, ok := h.acquire(ctx, start)
	if !ok {
		return out
	}
	defer release()
	return h.cred.scrub(h.run(ctx, req, body, start))
}

// prepare checks what can be checked before anything is sent and encodes
// the args; failures are NotExecuted with zero attempts.
func (h *HTTP) prepare(ctx context.Context, req Request) ([]byte, Outcome, bool) {
	if err := ctx.Err(); err != nil {
		return nil, outcome(NotExecuted, CodeCancelled, err.Error()), false
	}
	if err := checkDownstreamKey(req.DownstreamKey); err != nil {
		return nil, outcome(NotExecuted, CodeBadRequest, err.Error()), false
	}
	body, err := encodeArgs(req.Args)
	if err != nil {
		return nil, outcome(NotExecuted, CodeBadRequest, err.Error()), false
	}
	return body, Outcome{}, true
}

// encodeArgs encodes args as a JSON object.
//
// Why no size check here: max_args_bytes has one meaning, the size of the
// canonical arguments, and the saga checks it before a started event is
// written. A second check of the JSON size here let an intent
// commit started and then come back not_executed args_too_large.
func encodeArgs(args map[string]any) ([]byte, error) {
	if args == nil {
		args = map[string]any{}
	}
	body, err := json.Marshal(wire.ForJSON(args)) // floats no reader takes for another integer
	if err != nil {
		return nil, fmt.Errorf("tools: encode args: %w", err)
	}
	return body, nil
}

// startBudget is how long from now an attempt may still start and end
// within PendingTTL of start; negative when none may.
func (h *HTTP) startBudget(start time.Time) time.Duration {
	return h.spec.PendingTTL - h.spec.Timeout - h.now().Sub(start)
}

// acquire takes one of the MaxInFlight slots, waiting no longer than leaves
// time for one attempt within PendingTTL.
func (h *HTTP) acquire(ctx context.Context, start time.Time) (func(), Outcome, bool) {
	release := func() { <-h.slots }
	select {
	case h.slots <- struct{}{}:
		return release, Outcome{}, true
	default:
	}
	t := time.NewTimer(h.startBudget(start))
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return release, Outcome{}, true
	case <-ctx.Done():
		return nil, outcome(NotExecuted, CodeCancelled, ctx.Err().Error()), false
	case <-t.C:
		return nil, outcome(NotExecuted, CodeOverloaded, fmt.Sprintf("max_in_flight (%d) reached", h.spec.MaxInFlight)), false
	}
}

// run makes the attempts: at most Retries+1, each only while the
// PendingTTL budget allows it.
func (h *HTTP) run(ctx context.Context, req Request, body []byte, start time.Time) Outcome {
	for n := 1; ; n++ {
		out, retry := h.attempt(ctx, req, body)
		out.Attempts = n
		if !retry || n > h.spec.Retries {
			return out
		}
		wait := backoff(n)
		if wait > h.startBudget(start) {
			return annotate(out, out.Code, "no retry: pending_ttl budget spent")
		}
		if err := h.sleep(ctx, wait); err != nil {
			return annotate(out, CodeCancelled, "retries stopped: "+err.Error())
		}
	}
}

// annotate gives the last attempt's outcome a new code and a note on why
// no more attempts were made.
func annotate(out Outcome, code, note string) Outcome {
	msg := note + "; last attempt: " + out.Code
	if out.Message != "" {
		msg += ": " + out.Message
	}
	out.Code, out.Message = code, bound(msg, MaxMessageBytes)
	return out
}

// checkDownstreamKey refuses a key that would defeat deduplication or that
// cannot travel in a header.
func checkDownstreamKey(key string) error {
	if key == "" {
		return errors.New("tools: request has no DownstreamKey")
	}
	if !printableASCII(key) || len(key) > 256 {
		return errors.New("tools: DownstreamKey must be at most 256 bytes of printable ASCII")
	}
	return nil
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
