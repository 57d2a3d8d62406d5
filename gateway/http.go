package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/atmostonce/toolexec/client"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topics"
)

// Retry-After of a 202, in seconds. Why they differ: a running call
// usually ends within a second or two; a key in doubt waits for its
// tool's pending_ttl and an investigation.
const (
	retryRunning = 1
	retryInDoubt = 5
	// retryUnavailable is the Retry-After of a 503.
	retryUnavailable = 1
	// maxTraceparentBytes bounds the traceparent passed on (the executor
	// carries at most this much too).
	maxTraceparentBytes = 256
)

// routes is the API. Go's ServeMux picks the method-specific pattern
// first; the bare patterns answer every other method with a 405 problem.
func (g *Gateway) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /v1/tools", g.authed("list", g.listTools))
	mux.Handle("POST /v1/tools/{tool}/calls", g.authed("call", g.postCall))
	mux.Handle("GET /v1/tools/{tool}/calls/{key}", g.authed("get", g.getCall))
	mux.Handle("POST /v1/tools/{tool}/calls/{key}/compensate", g.authed("compensate", g.postCompensate))
	mux.Handle("/v1/tools", methodNotAllowed("GET"))
	mux.Handle("/v1/tools/{tool}/calls", methodNotAllowed("POST"))
	mux.Handle("/v1/tools/{tool}/calls/{key}", methodNotAllowed("GET"))
	mux.Handle("/v1/tools/{tool}/calls/{key}/compensate", methodNotAllowed("POST"))
	mux.Handle("/mcp", g.mcpHandler())
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusNotFound, codeNotFound, "no such path: "+r.URL.Path)
	}))
	return mux
}

func methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeProblem(w, http.StatusMethodNotAllowed, codeMethodNotAllowed, r.Method+" is not allowed here; use "+allow)
	})
}

type tenantHandler func(w http.ResponseWriter, r *http.Request, tenant string)

// authed authenticates the bearer token, then runs h with the token's
// tenant, and counts the request by route and status.
func (g *Gateway) authed(route string, h tenantHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() { g.m.observe(route, sw.status, time.Since(start)) }()
		tenant, ok := g.authenticate(r)
		if !ok {
			g.m.authFailures.Inc()
			sw.Header().Set("WWW-Authenticate", `Bearer realm="toolexec"`)
			writeProblem(sw, http.StatusUnauthorized, codeUnauthorized, "send Authorization: Bearer <token>; the token names the tenant")
			return
		}
		h(sw, r, tenant)
	})
}

// authenticate returns the tenant of the request's bearer token.
func (g *Gateway) authenticate(r *http.Request) (string, bool) {
	token, ok := bearer(r.Header.Get("Authorization"))
	if !ok {
		return "", false
	}
	return g.cfg.Tenants.Current().Authenticate(token)
}

func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// statusWriter remembers the status written, for the metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// toolView is one entry of GET /v1/tools.
type toolView struct {
	Name                   string         `json:"name"`
	Class                  string         `json:"class"`
	Description            string         `json:"description"`
	InputSchema            map[string]any `json:"input_schema"`
	IdempotencyKeyRequired bool           `json:"idempotency_key_required"`
}

func (g *Gateway) listTools(w http.ResponseWriter, _ *http.Request, tenant string) {
	out := struct {
		Tools []toolView `json:"tools"`
	}{Tools: []toolView{}}
	for _, t := range g.visibleTools(tenant) {
		out.Tools = append(out.Tools, toolView{Name: t.name(), Class: string(t.spec.Class), Description: t.spec.Description,
			InputSchema: t.schemaJSON, IdempotencyKeyRequired: t.requiresKey()})
	}
	writeJSON(w, http.StatusOK, out)
}

func (g *Gateway) postCall(w http.ResponseWriter, r *http.Request, tenant string) {
	t, ok := g.toolFor(tenant, r.PathValue("tool"))
	if !ok {
		writeProblem(w, http.StatusNotFound, codeUnknownTool, fmt.Sprintf("no tool %q", r.PathValue("tool")))
		return
	}
	key, p := requestKey(r, t)
	if p != nil {
		p.write(w)
		return
	}
	args, p := requestArgs(r, t)
	if p != nil {
		p.write(w)
		return
	}
	rep, err := g.send(r.Context(), intentReq{typ: topics.TypeCall, tenant: tenant, tool: t.name(), key: key, args: args,
		wait: g.wait(w, r), traceparent: traceparent(r)})
	if err != nil {
		g.sendFailed(w, err)
		return
	}
	g.writeCallReply(w, t, rep)
}

// requestKey reads the Idempotency-Key; a read-only tool without one gets
// a fresh key (reads keep no record).
func requestKey(r *http.Request, t *tool) (string, *problem) {
	key, err := parseIdempotencyKey(r.Header.Values("Idempotency-Key"))
	switch {
	case err != nil:
		return "", newProblem(http.StatusBadRequest, codeInvalidKey, err.Error())
	case key == "" && t.requiresKey():
		return "", newProblem(http.StatusBadRequest, codeMissingKey,
			fmt.Sprintf("tool %s is %s: send Idempotency-Key, the same on every retry of this call", t.name(), t.spec.Class))
	case key == "":
		return "read-" + client.NewID(), nil
	}
	return key, nil
}

// requestArgs reads the body and checks it against the tool's schema.
func requestArgs(r *http.Request, t *tool) (map[string]any, *problem) {
	args, err := decodeArgs(r.Body)
	switch {
	case errors.Is(err, errBodyTooLong):
		return nil, newProblem(http.StatusRequestEntityTooLarge, codePayloadTooLarge, err.Error())
	case err != nil:
		return nil, newProblem(http.StatusBadRequest, codeInvalidJSON, err.Error())
	}
	if errs := t.validate(args); len(errs) > 0 {
		p := newProblem(http.StatusBadRequest, codeInvalidArgs, schemaDetail(t, errs))
		p.Errors = errs
		return nil, p
	}
	wargs, err := wireArgs(args)
	if err != nil {
		return nil, newProblem(http.StatusBadRequest, codeInvalidJSON, err.Error())
	}
	if msg := t.argsTooLarge(wargs); msg != "" {
		return nil, newProblem(http.StatusBadRequest, topics.ReasonOversized, msg)
	}
	return wargs, nil
}

func schemaDetail(t *tool, errs []schemaError) string {
	first := errs[0]
	path := first.Path
	if path == "" {
		path = "(the arguments)"
	}
	return fmt.Sprintf("%d argument error(s) against the input schema of %s; first at %s: %s", len(errs), t.name(), path, first.Message)
}

// wait reads Prefer: wait=<seconds> (RFC 7240), capped at MaxWait, and
// says what it applied.
func (g *Gateway) wait(w http.ResponseWriter, r *http.Request) time.Duration {
	d := g.cfg.DefaultWait
	if s, ok := preferWait(r.Header.Values("Prefer")); ok {
		d = min(s, g.cfg.MaxWait)
	}
	w.Header().Set("Preference-Applied", "wait="+strconv.Itoa(int(d/time.Second)))
	return d
}

// preferWait finds wait=<non-negative integer> among the preferences.
// Other preferences, and a malformed wait, are ignored: preferences are
// hints (RFC 7240).
func preferWait(values []string) (time.Duration, bool) {
	for _, v := range values {
		for _, pref := range strings.Split(v, ",") {
			name, val, ok := strings.Cut(strings.TrimSpace(strings.SplitN(pref, ";", 2)[0]), "=")
			if !ok || !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(val), `"`))
			if err != nil || n < 0 {
				continue
			}
			return time.Duration(min(n, 3600)) * time.Second, true
		}
	}
	return 0, false
}

func traceparent(r *http.Request) string {
	tp := r.Header.Get("traceparent")
	if len(tp) > maxTraceparentBytes {
		return ""
	}
	return tp
}

// sendFailed answers a produce that failed; when the caller went away
// there is no one to answer.
func (g *Gateway) sendFailed(w http.ResponseWriter, err error) {
	if errors.Is(err, errUnavailable) {
		g.log.Warn("intent not produced", "err", err)
		w.Header().Set("Retry-After", strconv.Itoa(retryUnavailable))
		writeProblem(w, http.StatusServiceUnavailable, codeUnavailable, "the intent could not be sent; nothing ran twice: retry with the same key")
	}
}

// writeCallReply answers a call by the table of docs/gateway.md.
func (g *Gateway) writeCallReply(w http.ResponseWriter, t *tool, rep reply) {
	switch replyState(rep) {
	case stateRunning:
		g.writeAccepted(w, t, runningAnswer(rep.intent), retryRunning)
	case stateInDoubt:
		g.writeAccepted(w, t, rep.res, retryInDoubt)
	default:
		writeTerminal(w, rep.res)
	}
}

func writeTerminal(w http.ResponseWriter, res *topics.Result) {
	switch res.Status {
	case topics.StatusConflict:
		p := newProblem(http.StatusUnprocessableEntity, codeArgsMismatch, errMessage(res, "the key was used with other arguments"))
		p.IntentID = res.IntentID
		p.write(w)
	case topics.StatusRejected:
		code := topics.ReasonInvalidField
		if res.Error != nil && res.Error.Code != "" {
			code = res.Error.Code
		}
		p := newProblem(http.StatusBadRequest, code, errMessage(res, "the intent was rejected"))
		p.IntentID = res.IntentID
		p.write(w)
	default:
		writeAnswer(w, http.StatusOK, res)
	}
}

func errMessage(res *topics.Result, fallback string) string {
	if res.Error != nil && res.Error.Message != "" {
		return res.Error.Message
	}
	return fallback
}

// writeAccepted is a 202: the answer so far, where to ask again, and when.
// A read-only tool keeps no record, so there is no key to GET.
func (g *Gateway) writeAccepted(w http.ResponseWriter, t *tool, res *topics.Result, retry int) {
	if t.requiresKey() {
		w.Header().Set("Location", callPath(t.name(), res.Key))
	}
	w.Header().Set("Retry-After", strconv.Itoa(retry))
	writeAnswer(w, http.StatusAccepted, res)
}

// callPath is the GET path of a key.
func callPath(tool, key string) string {
	return "/v1/tools/" + url.PathEscape(tool) + "/calls/" + url.PathEscape(key)
}

func writeAnswer(w http.ResponseWriter, status int, res *topics.Result) {
	w.Header().Set("Idempotent-Replayed", strconv.FormatBool(res.WasReplay))
	writeJSON(w, status, answerJSON(res))
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := marshalJSON(v)
	if err != nil {
		writeProblem(w, http.StatusInternalServerError, codeInternal, "the answer cannot be written as JSON: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// pathKey reads {key}; a key no intent could carry is unknown.
func pathKey(r *http.Request) (string, bool) {
	k := r.PathValue("key")
	return k, k != "" && len(k) <= topics.MaxKeyBytes && utf8.ValidString(k)
}

func (g *Gateway) getCall(w http.ResponseWriter, r *http.Request, tenant string) {
	t, key, ok := g.knownKeyRequest(w, r, tenant)
	if !ok {
		return
	}
	rec, found := g.record(w, r, tenant, t, key)
	if !found {
		return
	}
	res, state := recordAnswer(rec, time.Now().UnixMilli())
	switch state {
	case stateRunning:
		g.writeAccepted(w, t, res, retryRunning)
	case stateInDoubt:
		g.writeAccepted(w, t, res, retryInDoubt)
	default:
		writeAnswer(w, http.StatusOK, res)
	}
}

// knownKeyRequest resolves {tool} and {key} of a key's path.
func (g *Gateway) knownKeyRequest(w http.ResponseWriter, r *http.Request, tenant string) (*tool, string, bool) {
	t, ok := g.toolFor(tenant, r.PathValue("tool"))
	if !ok {
		writeProblem(w, http.StatusNotFound, codeUnknownTool, fmt.Sprintf("no tool %q", r.PathValue("tool")))
		return nil, "", false
	}
	key, ok := pathKey(r)
	if !ok {
		writeProblem(w, http.StatusNotFound, codeUnknownKey, "no such key")
		return nil, "", false
	}
	return t, key, true
}

// record looks the key up in the event log. Another tenant's key, another
// tool's, an expired one and one that never was all give the same 404.
func (g *Gateway) record(w http.ResponseWriter, r *http.Request, tenant string, t *tool, key string) (*saga.Record, bool) {
	rec, err := g.lookup(r.Context(), tenant, key)
	if err != nil {
		if r.Context().Err() == nil {
			g.log.Warn("event log lookup failed", "err", err)
			w.Header().Set("Retry-After", strconv.Itoa(retryUnavailable))
			writeProblem(w, http.StatusServiceUnavailable, codeUnavailable, "the event log could not be read; retry")
		}
		return nil, false
	}
	if rec == nil || rec.Tool != t.name() {
		writeProblem(w, http.StatusNotFound, codeUnknownKey, "no such key")
		return nil, false
	}
	return rec, true
}

func (g *Gateway) postCompensate(w http.ResponseWriter, r *http.Request, tenant string) {
	t, key, ok := g.knownKeyRequest(w, r, tenant)
	if !ok {
		return
	}
	if _, found := g.record(w, r, tenant, t, key); !found {
		return
	}
	if t.spec.CompensateWith == "" {
		writeProblem(w, http.StatusConflict, codeNotCompensatable, fmt.Sprintf("tool %s has no compensate_with", t.name()))
		return
	}
	rep, err := g.send(r.Context(), intentReq{typ: topics.TypeCompensate, tenant: tenant, tool: t.name(), key: key,
		wait: g.wait(w, r), traceparent: traceparent(r)})
	if err != nil {
		g.sendFailed(w, err)
		return
	}
	g.writeCompensateReply(w, t, rep)
}

func (g *Gateway) writeCompensateReply(w http.ResponseWriter, t *tool, rep reply) {
	switch replyState(rep) {
	case stateRunning:
		g.writeAccepted(w, t, runningAnswer(rep.intent), retryRunning)
	case stateInDoubt:
		g.writeAccepted(w, t, rep.res, retryInDoubt)
	default:
		if rep.res.Status != topics.StatusRejected {
			writeAnswer(w, http.StatusOK, rep.res)
			return
		}
		msg := errMessage(rep.res, "the compensation was refused")
		if strings.Contains(msg, "has no record") { // expired since the lookup
			writeProblem(w, http.StatusNotFound, codeUnknownKey, "no such key")
			return
		}
		p := newProblem(http.StatusConflict, codeNotCompensatable, msg)
		p.IntentID = rep.res.IntentID
		p.write(w)
	}
}

// marshalJSON is json.Marshal without HTML escaping, and with a final
// newline: bodies are read by programs and by people at a terminal (curl),
// not embedded in pages, and "<token>" reads better than
// "\u003ctoken\u003e".
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
