package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// pathKey reads {key}; a key no intent could carry is unknown.
func pathKey(r *http.Request) (string, bool) {
	k := r.PathValue("key")
	return k, wire.CheckKey(k) == nil
}

func (g *Gateway) getCall(w http.ResponseWriter, r *http.Request, tenant string) {
	t, key, ok := g.knownKeyRequest(w, r, tenant)
	if !ok {
		return
	}
	if !t.requiresKey() { // reads keep no record: nothing to look up
		writeProblem(w, http.StatusNotFound, codeUnknownKey, "no such key")
		return
	}
	res, state, found := g.record(w, r, tenant, t, key)
	if !found {
		return
	}
	switch state {
	case stateRunning:
		g.writeAccepted(w, t, res, retryRunning)
	case stateInDoubt:
		g.writeAccepted(w, t, res, retryAfter(res, retryInDoubt))
	default:
		writeAnswer(w, http.StatusOK, res)
	}
}

// knownKeyRequest resolves {tool} and {key} of a key's path.
func (g *Gateway) knownKeyRequest(w http.ResponseWriter, r *http.Request, tenant string) (*tool, string, bool) {
	t, ok := g.toolFor(tenant, r.PathValue("tool"))
	if !ok {
		g.unknownTool(w, tenant, r.PathValue("tool"))
		return nil, "", false
	}
	key, ok := pathKey(r)
	if !ok {
		writeProblem(w, http.StatusNotFound, codeUnknownKey, "no such key")
		return nil, "", false
	}
	return t, key, true
}

// record looks the key up (lookup). Another tenant's key, another tool's,
// an expired one and one that never was all give the same 404.
func (g *Gateway) record(w http.ResponseWriter, r *http.Request, tenant string, t *tool, key string) (*wire.Result, answerState, bool) {
	res, state, err := g.lookup(r.Context(), tenant, t, key)
	if le, ok := limitOf(err); ok {
		writeLimited(w, le)
		return nil, 0, false
	}
	switch {
	case err != nil:
		if r.Context().Err() == nil {
			g.log.Warn("key lookup failed", "err", err)
			w.Header().Set("Retry-After", strconv.Itoa(retryUnavailable))
			writeProblem(w, http.StatusServiceUnavailable, codeUnavailable, "the key could not be looked up; retry")
		}
		return nil, 0, false
	case res == nil:
		writeProblem(w, http.StatusNotFound, codeUnknownKey, "no such key")
		return nil, 0, false
	}
	return res, state, true
}

func (g *Gateway) postCompensate(w http.ResponseWriter, r *http.Request, tenant string) {
	t, key, ok := g.knownKeyRequest(w, r, tenant)
	if !ok {
		return
	}
	if t.spec.CompensateWith == "" { // known without a lookup
		writeProblem(w, http.StatusConflict, codeNotCompensatable, fmt.Sprintf("tool %s has no compensate_with", t.name()))
		return
	}
	if _, _, found := g.record(w, r, tenant, t, key); !found {
		return
	}
	rep, err := g.send(r.Context(), intentReq{typ: wire.TypeCompensate, tenant: tenant, tool: t, key: key,
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
		g.writeAccepted(w, t, rep.res, retryAfter(rep.res, retryInDoubt))
	default:
		if rep.res.Busy() {
			writeBusy(w, rep.res)
			return
		}
		if rep.res.Status != codes.StatusRejected {
			writeAnswer(w, http.StatusOK, rep.res)
			return
		}
		if errors.Is(rep.res.Refusal(), wire.ErrNoRecord) { // expired since the lookup
			writeProblem(w, http.StatusNotFound, codeUnknownKey, "no such key")
			return
		}
		p := newProblem(http.StatusConflict, codeNotCompensatable, errMessage(rep.res, "the compensation was refused"))
		p.IntentID = rep.res.IntentID
		p.write(w)
	}
}
