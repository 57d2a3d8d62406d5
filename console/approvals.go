package console

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// Approvals: the keys of tools with approval: required that wait for a
// person (the reconciler's last scan, Backend.Approvals), a page to list
// them (GET /console/approvals), the approve and deny forms of a key's
// page (key.go), and a JSON API for a team's own approval UI or chat bot
// (/console/api/approvals, bearer tokens only). Every route ends in one
// approve or deny command on the control topic, bound to the request the
// person saw (its intent and its arguments' digest), and only an operator
// among the tool's approvers may send it.

// errNotApprover refuses a decision by an operator the tool does not name.
var errNotApprover = errors.New("not among the tool's approvers")

// requestData is a key awaiting approval as a page shows it.
type requestData struct {
	reconciler.ApprovalRow
	ArgsJSON  string
	AgeMs     int64
	LeftMs    int64 // until it lapses
	Asked     string
	MayDecide bool
	Link      string
}

func (c *Console) requestOf(op operator, row reconciler.ApprovalRow, spec tools.Spec) requestData {
	now := c.cfg.Now().UnixMilli()
	args, _ := json.MarshalIndent(row.Args, "", "  ")
	d := requestData{ApprovalRow: row, ArgsJSON: string(args), AgeMs: now - row.RequestedAt, LeftMs: row.Until - now,
		Asked: asked(row.Approvers), MayDecide: c.mayDecide(op, spec),
		Link: "/console/key?" + url.Values{"tenant": {row.Tenant}, "key": {row.Key}}.Encode()}
	return d
}

func asked(approvers string) string {
	if approvers == "" {
		return "any operator"
	}
	return approvers
}

// mayDecide reports whether op is among spec's approvers (by name, or by
// a group of the operators file).
func (c *Console) mayDecide(op operator, spec tools.Spec) bool {
	return spec.MayApprove(op.name, c.cfg.Operators.Current().GroupsOf(op.name))
}

type approvalsData struct {
	Op       operator
	Coverage string
	Rows     []requestData
}

// approvalsPage is GET /console/approvals: the keys awaiting approval,
// oldest first.
func (c *Console) approvalsPage(w http.ResponseWriter, _ *http.Request, op operator) {
	lookup := specLookup(c.cfg.Backend.Specs())
	d := approvalsData{Op: op, Coverage: c.coverage()}
	for _, row := range c.cfg.Backend.Approvals() {
		spec, _ := lookup(row.Tool)
		d.Rows = append(d.Rows, c.requestOf(op, row, spec))
	}
	c.render(w, http.StatusOK, "approvals", d)
}

// decide sends an approve or deny for op, once the key's events show it
// awaiting approval and op among its tool's approvers. req names the
// request and digest the person saw (the executor refuses any other).
func (c *Console) decide(ctx context.Context, op operator, req reconciler.ResolveRequest) (*wire.Result, error) {
	evs, err := c.history(ctx, req.Tenant, req.Key)
	if err != nil {
		return nil, err
	}
	rec := eventlog.FoldHistory(evs)
	if rec == nil || rec.Status != saga.StatusAwaitingApproval {
		return nil, fmt.Errorf("%w: %s", errNotAwaiting, statusText(rec))
	}
	spec, _ := specLookup(c.cfg.Backend.Specs())(rec.Tool)
	if !c.mayDecide(op, spec) {
		return nil, fmt.Errorf("%w: %s is asked to %s's requests; you are %s", errNotApprover, asked(spec.ApproversText()), rec.Tool, op.name)
	}
	req.By = op.name
	c.cfg.Logger.Info("console: approval decision", "operator", op.name, "key", wire.RoutingKey(req.Tenant, req.Key), "type", req.Type,
		"call_id", req.CallID, "args_digest", req.ArgsDigest)
	return c.cfg.Backend.Send(ctx, req)
}

// errNotAwaiting refuses a decision on a key that awaits no approval.
var errNotAwaiting = errors.New("the key awaits no approval")

func statusText(rec *saga.Record) string {
	if rec == nil {
		return "it has no record"
	}
	return "it is " + rec.Status.String()
}

// apiDecision is the body of POST /console/api/approvals.
type apiDecision struct {
	Tenant     string `json:"tenant"`
	Key        string `json:"key"`
	Decision   string `json:"decision"` // approve or deny
	Reason     string `json:"reason"`
	CallID     string `json:"call_id"`
	ArgsDigest string `json:"args_digest"`
}

// apiAnswer is what the API answers a decision: the executor's answer, or
// why nothing was sent or applied.
type apiAnswer struct {
	Sent   bool         `json:"sent"`
	Answer *wire.Result `json:"answer,omitempty"`
	Error  string       `json:"error,omitempty"`
}

// api wraps the JSON API: a bearer token of the operators file, never a
// browser session (its JSON carries no CSRF token).
func (c *Console) api(h func(http.ResponseWriter, *http.Request, operator)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		op, why := c.identify(r)
		if why != authOK || op.sess != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolexec console"`)
			writeAPI(w, http.StatusUnauthorized, apiAnswer{Error: "send Authorization: Bearer <an operator's token>"})
			return
		}
		h(w, r, op)
	}
}

// apiApprovals is GET /console/api/approvals: the keys awaiting approval
// with what a decision must name, and whether the caller may decide each.
func (c *Console) apiApprovals(w http.ResponseWriter, _ *http.Request, op operator) {
	lookup := specLookup(c.cfg.Backend.Specs())
	type item struct {
		reconciler.ApprovalRow
		MayDecide bool `json:"may_decide"`
	}
	out := []item{}
	for _, row := range c.cfg.Backend.Approvals() {
		spec, _ := lookup(row.Tool)
		out = append(out, item{ApprovalRow: row, MayDecide: c.mayDecide(op, spec)})
	}
	scanned, n := c.cfg.Backend.Coverage()
	writeAPI(w, http.StatusOK, map[string]any{"approvals": out, "partitions_scanned": scanned, "partitions": n})
}

// apiDecide is POST /console/api/approvals: approve or deny one key's
// request, named by its call id and its arguments' digest (both
// required: the decision is about what the caller showed a person).
func (c *Console) apiDecide(w http.ResponseWriter, r *http.Request, op operator) {
	var in apiDecision
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil && !errors.Is(err, io.EOF) {
		writeAPI(w, http.StatusBadRequest, apiAnswer{Error: "the body is not a decision: " + err.Error()})
		return
	}
	req, err := decisionRequest(in)
	if err != nil {
		writeAPI(w, http.StatusBadRequest, apiAnswer{Error: err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), c.cfg.ActionTimeout)
	defer cancel()
	res, err := c.decide(ctx, op, req)
	switch {
	case errors.Is(err, errNotApprover):
		writeAPI(w, http.StatusForbidden, apiAnswer{Error: err.Error()})
	case errors.Is(err, errNotAwaiting):
		writeAPI(w, http.StatusConflict, apiAnswer{Error: err.Error()})
	case errors.Is(err, reconciler.ErrRejected):
		writeAPI(w, http.StatusConflict, apiAnswer{Sent: true, Answer: res, Error: "refused by the executor: " + errMessage(res)})
	case err != nil:
		writeAPI(w, http.StatusGatewayTimeout, apiAnswer{Sent: res != nil, Error: fmt.Sprintf("no answer from the executor: %v; the command %s may still be applied", err, req.ID)})
	default:
		writeAPI(w, http.StatusOK, apiAnswer{Sent: true, Answer: res})
	}
}

// decisionRequest checks an API decision and makes its command.
func decisionRequest(in apiDecision) (reconciler.ResolveRequest, error) {
	req := reconciler.ResolveRequest{Type: in.Decision, Tenant: in.Tenant, Key: in.Key, CallID: in.CallID, ArgsDigest: in.ArgsDigest,
		Reason: strings.TrimSpace(in.Reason), ID: "op-api-" + randomToken()[:16]}
	switch {
	case in.Tenant == "" || in.Key == "":
		return req, errors.New("name the key: tenant and key")
	case in.Decision != wire.TypeApprove && in.Decision != wire.TypeDeny:
		return req, fmt.Errorf("decision %q is not approve or deny", in.Decision)
	case in.CallID == "" || in.ArgsDigest == "":
		return req, errors.New("name the request decided on: call_id and args_digest, as GET /console/api/approvals lists them")
	}
	return req, checkReason(req.Reason)
}

func checkReason(reason string) error {
	switch {
	case reason == "":
		return errors.New("say why: the reason is recorded in the event log with your name")
	case len(reason) > wire.MaxReasonBytes:
		return fmt.Errorf("the reason is longer than %d bytes", wire.MaxReasonBytes)
	}
	return nil
}

func errMessage(res *wire.Result) string {
	if res == nil || res.Error == nil {
		return "no reason given"
	}
	return res.Error.Message
}

func writeAPI(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// approvalActions are the forms of a key awaiting approval.
func approvalActions() []keyAction {
	return []keyAction{
		{Type: wire.TypeApprove, Title: "Approve",
			Explain: "Runs the call once, with exactly the arguments above (their digest is part of the approval): the executor records your approval and starts the call in one transaction. Every waiting intent gets the call's outcome."},
		{Type: wire.TypeDeny, Title: "Deny",
			Explain: "Ends the key failed (approval_denied) with your reason: nothing runs, and every waiting intent, and every later one with this key, gets that answer."},
	}
}
