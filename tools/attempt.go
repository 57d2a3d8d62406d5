package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync/atomic"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// errNoReplay is returned to net/http when it asks to re-send a request
// that was already written in full; see replayGuard.
var errNoReplay = errors.New("tools: request already sent; not replaying")

// errTooLarge reports a body over the read limit.
var errTooLarge = errors.New("tools: response too large")

// attemptTrace records, from httptrace hooks, how far an attempt got.
// The hooks may run on net/http's goroutines, hence the atomics.
type attemptTrace struct {
	reached  atomic.Bool // a connection to the tool was obtained
	sent     atomic.Bool // the whole request was written and flushed
	answered atomic.Bool // the first byte of an answer arrived
}

func (t *attemptTrace) hooks() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn:              func(httptrace.GotConnInfo) { t.reached.Store(true) },
		GotFirstResponseByte: func() { t.answered.Store(true) },
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				t.sent.Store(true)
			}
		},
	}
}

// attempt sends the request once; it reports whether a retry is allowed.
func (h *HTTP) attempt(ctx context.Context, req Request, body []byte) (Outcome, bool) {
	actx, cancel := context.WithTimeout(ctx, h.spec.Timeout)
	defer cancel()
	tr := &attemptTrace{}
	actx = httptrace.WithClientTrace(actx, tr.hooks())
	hreq, err := h.newRequest(actx, req, body, tr)
	if err != nil {
		return outcome(NotExecuted, CodeBadRequest, err.Error()), false
	}
	resp, err := h.client.Do(hreq)
	if err != nil {
		return h.transportFailure(ctx, err, tr.reached.Load())
	}
	defer resp.Body.Close()
	return h.response(ctx, resp)
}

// newRequest builds the POST.
//
// Why GetBody is guarded: net/http transparently re-sends a request on a
// reused keep-alive connection that failed, and treats a POST as safe to
// re-send when it carries an Idempotency-Key header (Request.isReplayable)
// and has GetBody. That is right only if nothing was written, or if the
// downstream honours the key, and we send the header to tools of every
// class. replayGuard lets net/http re-send only while the request has not
// been written in full; our own loop makes every other retry, counted.
// Once an answer has begun, GetBody can only be asked for by the client's
// redirect code (307/308), which refuseRedirect then stops, so it is given
// the body: refusing would turn a plain 3xx into a transport error.
func (h *HTTP) newRequest(ctx context.Context, req Request, body []byte, tr *attemptTrace) (*http.Request, error) {
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, h.spec.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	hreq.GetBody = replayGuard(body, tr)
	h.cred.apply(hreq.Header)
	setHeaders(hreq.Header, req)
	return hreq, nil
}

func replayGuard(body []byte, tr *attemptTrace) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		if tr.sent.Load() && !tr.answered.Load() {
			return nil, errNoReplay
		}
		return io.NopCloser(bytes.NewReader(body)), nil
	}
}

func setHeaders(h http.Header, req Request) {
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json")
	h.Set("Idempotency-Key", req.DownstreamKey)
	h.Set("X-Tool-Tenant", logHeader(req.Tenant))
	h.Set("X-Tool-Key", logHeader(req.Key))
	if req.Traceparent != "" && printableASCII(req.Traceparent) && len(req.Traceparent) <= 256 {
		h.Set("traceparent", req.Traceparent)
		if req.Tracestate != "" && printableASCII(req.Tracestate) && len(req.Tracestate) <= wire.MaxTracestateBytes {
			h.Set("tracestate", req.Tracestate)
		}
	}
}

// logHeader makes a value fit for a header that only serves the
// downstream's logs: printable ASCII kept, anything else query-escaped
// (so that a hostile key cannot break the request), bounded to 256 bytes.
func logHeader(s string) string {
	if !printableASCII(s) {
		s = url.QueryEscape(s)
	}
	return bound(s, 256)
}

// transportFailure classifies an error from client.Do. reached errs on the
// safe side: a reused keep-alive connection found dead before anything was
// written still counts as reached, giving Unknown rather than NotExecuted.
func (h *HTTP) transportFailure(ctx context.Context, err error, reached bool) (Outcome, bool) {
	switch {
	case ctx.Err() != nil && reached:
		return outcome(Unknown, CodeCancelled, err.Error()), false
	case ctx.Err() != nil:
		return outcome(NotExecuted, CodeCancelled, err.Error()), false
	case !reached:
		return outcome(NotExecuted, notReachedCode(err), err.Error()), true
	}
	return outcome(Unknown, sentCode(err), err.Error()), h.retriesAmbiguous()
}

// retriesAmbiguous reports whether an outcome that may have reached the
// tool may be retried: only when the downstream dedupes on our key.
func (h *HTTP) retriesAmbiguous() bool { return h.spec.Class.RetriesAmbiguous() }

// response maps an HTTP answer to an outcome.
func (h *HTTP) response(ctx context.Context, resp *http.Response) (Outcome, bool) {
	code := resp.StatusCode
	switch {
	case code >= 200 && code < 300:
		return h.success(ctx, resp)
	case code == http.StatusTooManyRequests: // rejected before acting
		return statusOutcome(NotExecuted, resp), true
	case code == http.StatusRequestTimeout: // may have acted
		return statusOutcome(Unknown, resp), h.retriesAmbiguous()
	case code >= 400 && code < 500:
		return statusOutcome(Failed, resp), false
	case code >= 500 && code < 600:
		return statusOutcome(Unknown, resp), h.retriesAmbiguous()
	}
	return statusOutcome(Unknown, resp), false
}

// statusOutcome is a non-2xx outcome whose message is the first 1 KiB of
// the body.
func statusOutcome(st Status, resp *http.Response) Outcome {
	head, _ := io.ReadAll(io.LimitReader(resp.Body, MaxMessageBytes))
	return outcome(st, httpCode(resp.StatusCode), string(head))
}

// success reads a 2xx body. The tool did act, so any trouble reading the
// answer is Unknown; NativeKey may ask again and get the stored answer.
func (h *HTTP) success(ctx context.Context, resp *http.Response) (Outcome, bool) {
	data, err := readBounded(resp.Body, maxResponseBytes)
	switch {
	case errors.Is(err, errTooLarge):
		return outcome(Unknown, CodeResponseTooLarge, err.Error()), false
	case err != nil && ctx.Err() != nil:
		return outcome(Unknown, CodeCancelled, err.Error()), false
	case err != nil:
		return outcome(Unknown, sentCode(err), err.Error()), h.retriesAmbiguous()
	}
	res, err := decodeResult(data)
	if err != nil { // the tool acted; its result cannot be carried exactly
		return Outcome{Status: Succeeded, Code: codes.ErrResultNotStored,
			Message: bound("the call succeeded; its result is not kept: it cannot be carried exactly ("+err.Error()+")", MaxMessageBytes)}, false
	}
	return Outcome{Status: Succeeded, Result: res}, false
}

// readBounded reads all of r, failing with errTooLarge past limit bytes.
func readBounded(r io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err == nil && int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, err
}

// decodeResult decodes a 2xx body: JSON into any, its numbers as the
// wire carries them (wire.ParseNumber: integers exactly, as int64 or
// uint64, other numbers as the float that names them); an empty body is
// nil; a body that is not JSON is returned as a string (at most 1 MiB,
// the read limit), since the tool did succeed. A number the wire cannot
// carry exactly (an integer beyond 64 bits) is an error: the result would
// reach the caller as another value.
func decodeResult(data []byte) (any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, nil
	}
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil || d.More() {
		return string(data), nil
	}
	return exactNumbers(v)
}

// exactNumbers replaces each json.Number with the value the wire carries
// for it: 9007199254740993 and 18446744073709551615 stay exact, and 120
// stays an integer instead of becoming 120.0.
func exactNumbers(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		return wire.ParseNumber(string(x))
	case map[string]any:
		for k, e := range x {
			n, err := exactNumbers(e)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
	case []any:
		for i, e := range x {
			n, err := exactNumbers(e)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
	}
	return v, nil
}
