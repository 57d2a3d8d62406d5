package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

func (g *Gateway) postCall(w http.ResponseWriter, r *http.Request, tenant string) {
	t, ok := g.toolFor(tenant, r.PathValue("tool"))
	if !ok {
		g.unknownTool(w, tenant, r.PathValue("tool"))
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
	rep, err := g.send(r.Context(), intentReq{typ: wire.TypeCall, tenant: tenant, tool: t, key: key, args: args,
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

// requestArgs reads the body, turns its numbers into the values the
// wire carries and checks those against the tool's schema.
func requestArgs(r *http.Request, t *tool) (map[string]any, *problem) {
	args, err := decodeArgs(r.Body)
	switch {
	case errors.Is(err, errBodyTooLong):
		return nil, newProblem(http.StatusRequestEntityTooLarge, codePayloadTooLarge, err.Error())
	case err != nil:
		return nil, newProblem(http.StatusBadRequest, codeInvalidJSON, err.Error())
	}
	wargs, err := wireArgs(args)
	if err != nil {
		return nil, newProblem(http.StatusBadRequest, codeInvalidArgs, "the number at "+err.Error())
	}
	if errs := t.validate(wargs); len(errs) > 0 {
		p := newProblem(http.StatusBadRequest, codeInvalidArgs, schemaDetail(t, errs))
		p.Errors = errs
		return nil, p
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

// traceparent is the caller's W3C traceparent, or "" when it is not a
// valid one: the call still runs, untraced, rather than be rejected by
// the executor for a header the caller may not control.
func traceparent(r *http.Request) string {
	tp, _ := callerTrace(r.Header.Get("traceparent"), "")
	return tp
}

// callerTrace is the trace context a caller sent (an HTTP header, an MCP
// call's _meta) as the gateway passes it on: a traceparent that is not a
// valid W3C one is dropped, with its tracestate, and a tracestate over the
// wire's bound is dropped alone, so that no caller's tracing header ever
// gets its call rejected. The one check of both paths.
func callerTrace(traceparent, tracestate string) (string, string) {
	if !wire.ValidTraceparent(traceparent) {
		return "", ""
	}
	if len(tracestate) > wire.MaxTracestateBytes {
		tracestate = ""
	}
	return traceparent, tracestate
}

// sendFailed answers a produce that failed; when the caller went away
// there is no one to answer.
func (g *Gateway) sendFailed(w http.ResponseWriter, err error) {
	if le, ok := limitOf(err); ok {
		writeLimited(w, le)
		return
	}
	if rej, ok := refusal(err); ok {
		newProblem(http.StatusBadRequest, rej.Reason, rej.Detail).write(w)
		return
	}
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
		g.writeAccepted(w, t, rep.res, retryAfter(rep.res, retryInDoubt))
	default:
		writeTerminal(w, rep.res)
	}
}

func writeTerminal(w http.ResponseWriter, res *wire.Result) {
	if res.Busy() {
		writeBusy(w, res)
		return
	}
	switch res.Status {
	case codes.StatusConflict:
		p := newProblem(http.StatusUnprocessableEntity, codeArgsMismatch, errMessage(res, "the key was used with other arguments"))
		p.IntentID = res.IntentID
		p.write(w)
	case codes.StatusRejected:
		code := codes.ReasonInvalidField
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

func errMessage(res *wire.Result, fallback string) string {
	if res.Error != nil && res.Error.Message != "" {
		return res.Error.Message
	}
	return fallback
}
