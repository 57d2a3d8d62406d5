package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// keyData is one key's page.
type keyData struct {
	Op          operator
	Tenant, Key string
	Found       bool
	Rec         *saga.Record
	Spec        tools.Spec
	Subject     *reconciler.Subject // what is in doubt; nil when nothing is
	Row         *reconciler.Row     // the reconciler's investigation, when it lists the key
	Request     *requestData        // the key's request for approval, while it awaits one
	Timeline    []timelineRow
	Actions     []keyAction
	StillLands  bool  // an action now needs force: the call may still reach its tool
	LandsBy     int64 // until when (unix ms)
	Notice      string
	Refusal     string
	Problem     string
	ListLink    string
	events      []*saga.Event // the key's history, for the notice
}

// keyPage is GET /console/key?tenant=T&key=K: the key's timeline and what
// an operator may do about it.
func (c *Console) keyPage(w http.ResponseWriter, r *http.Request, op operator) {
	q := r.URL.Query()
	d, status := c.keyData(r.Context(), op, q.Get("tenant"), q.Get("key"))
	if done := q.Get("done"); done != "" && d.Problem == "" {
		d.Notice = commandNotice(d.events, done)
	}
	c.render(w, status, "key", d)
}

// commandNotice says what the key's event log holds of the command with
// id (the action just done, whose page the console redirected to): the
// notice comes from the log, never from the query string, so a link
// cannot show an operator an action that never happened.
func commandNotice(evs []*saga.Event, id string) string {
	for _, ev := range evs {
		if ev.IntentID == id && commandEvent(ev.Kind) {
			return "Recorded: " + sentence(ev)
		}
	}
	return "The command this link names is not in the key's event log (yet): the timeline below is what is recorded."
}

// commandEvent: the events an operator's command records, under the
// command's id.
func commandEvent(k saga.EventKind) bool {
	switch k {
	case saga.EvResolved, saga.EvCompensationStarted, saga.EvApproved, saga.EvDenied:
		return true
	}
	return false
}

func (c *Console) keyData(ctx context.Context, op operator, tenant, key string) (keyData, int) {
	d := keyData{Op: op, Tenant: tenant, Key: key, ListLink: "/console"}
	if tenant == "" || key == "" {
		d.Problem = "name a key: /console/key?tenant=T&key=K"
		return d, http.StatusBadRequest
	}
	evs, err := c.history(ctx, tenant, key)
	if err != nil {
		d.Problem = "the key's events could not be read: " + err.Error()
		return d, http.StatusServiceUnavailable
	}
	if len(evs) == 0 {
		d.Problem = fmt.Sprintf("the event log holds no event of %s (the key was never called, or its events are past retention)", wire.RoutingKey(tenant, key))
		return d, http.StatusNotFound
	}
	d.Found, d.Timeline, d.Rec, d.events = true, timeline(evs), eventlog.FoldHistory(evs), evs
	c.describe(&d)
	return d, http.StatusOK
}

// describe fills what the key's record implies: its tool, what is in
// doubt, the investigation, the actions.
func (c *Console) describe(d *keyData) {
	lookup := specLookup(c.cfg.Backend.Specs())
	if d.Rec == nil {
		return // expired: the key is free again
	}
	d.Spec, _ = lookup(d.Rec.Tool)
	if subj, ok := reconciler.SubjectOf(d.Rec, lookup); ok {
		d.Subject = &subj
		now := c.cfg.Now().UnixMilli()
		d.StillLands, d.LandsBy = now < subj.Deadline, subj.Deadline
	}
	for _, row := range c.cfg.Backend.Rows() {
		if row.Tenant == d.Tenant && row.Key == d.Key {
			d.Row = &row
			break
		}
	}
	d.Actions = actionsFor(d.Rec, d.Subject, d.Spec)
	if d.Rec.Status == saga.StatusAwaitingApproval {
		req := c.requestOf(d.Op, reconciler.RowOfRequest(d.Rec), d.Spec)
		d.Request = &req
		if !req.MayDecide {
			d.Actions = nil
		}
	}
}

// history reads the key's events, at most maxHistoryReads at once (each
// scans a partition of the log).
func (c *Console) history(ctx context.Context, tenant, key string) ([]*saga.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, historyTimeout)
	defer cancel()
	select {
	case c.historyQ <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("too many key pages are being read; try again: %w", ctx.Err())
	}
	defer func() { <-c.historyQ }()
	return c.cfg.Backend.History(ctx, tenant, key)
}

func specLookup(specs []tools.Spec) reconciler.Lookup {
	by := make(map[string]tools.Spec, len(specs))
	for _, s := range specs {
		by[s.Name] = s
	}
	return func(name string) (tools.Spec, bool) { s, ok := by[name]; return s, ok }
}

// keyAction is one action the page offers, with what it will do.
type keyAction struct {
	Type    string // wire.TypeResolve or wire.TypeCompensate
	Outcome string // a resolve's
	Title   string
	Explain string
	Result  bool // asks for the result (JSON)
	Error   bool // asks for an error code and message
}

// actionsFor lists what the key's state allows: settling the call or the
// compensation in doubt, and compensating an effect that happened or may
// have.
func actionsFor(rec *saga.Record, subj *reconciler.Subject, spec tools.Spec) []keyAction {
	var out []keyAction
	switch {
	case subj != nil && subj.Phase == reconciler.PhaseCall:
		out = append(out,
			keyAction{Type: wire.TypeResolve, Outcome: codes.StatusSucceeded, Title: "Resolve: succeeded", Result: true,
				Explain: "Records that the call took effect, with this result. Every waiting intent gets it as its answer, and later intents with this key replay it."},
			keyAction{Type: wire.TypeResolve, Outcome: codes.StatusFailed, Title: "Resolve: failed", Error: true,
				Explain: "Records that the call failed for good. Waiting and later intents get this error, replayed; the key is not called again (a new attempt needs a new key)."},
			keyAction{Type: wire.TypeResolve, Outcome: codes.StatusNotExecuted, Title: "Resolve: not executed",
				Explain: "Records that the call never reached the tool. Waiting intents are answered not_executed and the key is free: the next intent with this key calls the tool again, under a new downstream key. Only if you know the tool never acted."})
	case subj != nil && subj.Phase == reconciler.PhaseCompensation:
		out = append(out,
			keyAction{Type: wire.TypeResolve, Outcome: codes.StatusCompensated, Title: "Resolve the compensation: compensated", Result: true,
				Explain: "Records that the compensation took effect: the key ends compensated and its waiters are answered so."},
			keyAction{Type: wire.TypeResolve, Outcome: codes.StatusCompensationFailed, Title: "Resolve the compensation: failed", Error: true,
				Explain: "Records that the compensation failed for good: the key ends compensation_failed and the effect stays."},
			keyAction{Type: wire.TypeResolve, Outcome: codes.StatusNotExecuted, Title: "Resolve the compensation: not executed",
				Explain: "Records that the compensation never reached its tool: the key returns to its state before the compensation, and may be compensated again."})
	}
	if rec.Status == saga.StatusAwaitingApproval {
		return approvalActions()
	}
	canUndo := rec.Status == saga.StatusSucceeded || (subj != nil && subj.Phase == reconciler.PhaseCall)
	if spec.CompensateWith != "" && canUndo {
		out = append(out, keyAction{Type: wire.TypeCompensate, Title: "Compensate with " + spec.CompensateWith,
			Explain: "Asks the executor to undo the effect with " + spec.CompensateWith + ", under a downstream key of its own. The key ends compensated, or compensation_failed; the page shows the compensation in the timeline."})
	}
	return out
}

// keyAction is POST /console/key: send the operator's command and show
// the executor's answer.
func (c *Console) keyAction(w http.ResponseWriter, r *http.Request, op operator) {
	f := r.PostForm
	req, err := commandOf(f, op.name)
	if err != nil {
		c.refuse(w, r, op, f, http.StatusBadRequest, err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), c.cfg.ActionTimeout)
	defer cancel()
	res, err := c.send(ctx, op, req)
	c.cfg.Logger.Info("console: operator action", "operator", op.name, "key", wire.RoutingKey(req.Tenant, req.Key), "type", req.Type,
		"outcome", req.Outcome, "forced", req.Force, "call_id", req.CallID, "answer", answerStatus(res), "err", err)
	switch {
	case errors.Is(err, errNotApprover), errors.Is(err, errNotAwaiting):
		c.refuse(w, r, op, f, http.StatusForbidden, "Not sent: "+err.Error()+".")
	case errors.Is(err, reconciler.ErrRejected) && reconciler.StillLanding(res):
		c.refuse(w, r, op, f, http.StatusConflict, "Refused: the call may still reach its tool until its pending_ttl passes ("+res.Error.Message+"). Wait, or tick \"force\" if you know it cannot land any more (recorded as forced).")
	case errors.Is(err, reconciler.ErrRejected):
		c.refuse(w, r, op, f, http.StatusConflict, "Refused by the executor: "+res.Error.Message)
	case err != nil:
		c.refuse(w, r, op, f, http.StatusGatewayTimeout, fmt.Sprintf("No answer from the executor: %v. The command %s may still be applied: reload this page to see the timeline.", err, req.ID))
	default:
		q := url.Values{"tenant": {req.Tenant}, "key": {req.Key}, "done": {req.ID}} // the page finds the command in the log
		http.Redirect(w, r, "/console/key?"+q.Encode(), http.StatusSeeOther)
	}
}

func answerStatus(res *wire.Result) string {
	if res == nil {
		return ""
	}
	return res.Status
}

// send sends an action's command: an approve or deny through decide
// (who may, bound to the request), any other as it is.
func (c *Console) send(ctx context.Context, op operator, req reconciler.ResolveRequest) (*wire.Result, error) {
	if req.Type == wire.TypeApprove || req.Type == wire.TypeDeny {
		return c.decide(ctx, op, req)
	}
	return c.cfg.Backend.Send(ctx, req)
}

// refuse shows the key page again with why the action was not done.
func (c *Console) refuse(w http.ResponseWriter, r *http.Request, op operator, f url.Values, status int, why string) {
	d, _ := c.keyData(r.Context(), op, f.Get("tenant"), f.Get("key"))
	d.Refusal = why
	c.render(w, status, "key", d)
}

// commandOf reads the action's form: the key, the call it was shown for,
// the command and its reason (required).
func commandOf(f url.Values, by string) (reconciler.ResolveRequest, error) {
	req := reconciler.ResolveRequest{Type: f.Get("type"), Tenant: f.Get("tenant"), Key: f.Get("key"), CallID: f.Get("call_id"),
		Outcome: f.Get("outcome"), By: by, Reason: strings.TrimSpace(f.Get("reason")), Force: f.Get("force") == "on",
		ArgsDigest: f.Get("args_digest"), ID: "op-console-" + randomToken()[:16]}
	decision := req.Type == wire.TypeApprove || req.Type == wire.TypeDeny
	switch {
	case req.Tenant == "" || req.Key == "":
		return req, errors.New("the form names no key")
	case req.Type != wire.TypeResolve && req.Type != wire.TypeCompensate && !decision:
		return req, fmt.Errorf("unknown action %q", req.Type)
	case req.Type != wire.TypeResolve && req.Outcome != "":
		return req, fmt.Errorf("a %s takes no outcome", req.Type)
	case decision && (req.CallID == "" || req.ArgsDigest == ""):
		return req, errors.New("the form names no request (call id and arguments' digest): reload the page")
	}
	if err := checkReason(req.Reason); err != nil {
		return req, err
	}
	if s := strings.TrimSpace(f.Get("result")); s != "" {
		if err := json.Unmarshal([]byte(s), &req.Result); err != nil {
			return req, fmt.Errorf("the result is not JSON: %v", err)
		}
	}
	if code, msg := strings.TrimSpace(f.Get("error_code")), strings.TrimSpace(f.Get("error_message")); code != "" || msg != "" {
		req.Err = &wire.ErrorInfo{Code: code, Message: msg}
	}
	return req, nil
}
