package saga_test

import (
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
)

// approvalTTL is the "transfer" tool's approval_ttl.
const approvalTTL = 600_000

func transfer(id, args string) saga.Input { return callTool(id, "transfer", args) }

// decide is an operator's approve or deny of the key's request: for the
// call of intent callID ("" unconditional) and the arguments of digest
// digest (nil: whatever was recorded).
func decide(typ saga.InputType, id, callID string, digest []byte) saga.Input {
	return saga.Input{Type: typ, IntentID: id, Tenant: tenant, Key: key, CallID: callID, ArgsHash: digest,
		By: "alice", Reason: "checked the invoice", Partition: 1, Owner: 1}
}

func approveCmd(id string) saga.Input { return decide(saga.InputApprove, id, "A", hashOf("x")) }
func denyCmd(id string) saga.Input    { return decide(saga.InputDeny, id, "A", hashOf("x")) }

// awaiting is the answer of an intent to a key awaiting approval (A's
// request, attempt 1).
func awaiting(to string, attempt int) ans {
	return ans{to: to, status: codes.StatusPending, replay: to != "A", orig: "A", attempt: attempt, code: codes.ErrAwaitingApproval}
}

func approvedAck(to string, replay bool) ans {
	return ans{to: to, status: codes.StatusApproved, orig: "A", attempt: 1, replay: replay}
}

// requestA is the first intent of a "transfer" key: recorded awaiting
// approval, answered at once, nothing called.
var requestA = step{at: 0, in: ptr(transfer("A", "x")), verdict: saga.VerdictAwaitApproval,
	events: []saga.EventKind{saga.EvAwaitingApproval}, answers: []ans{awaiting("A", 1)}, after: saga.StatusAwaitingApproval,
	check: func(t *testing.T, rec *saga.Record) {
		ap := rec.Approval
		if ap == nil || ap.RequestedAt != t0 || ap.Until != t0+approvalTTL || ap.Approvers != "alice, group:payments" ||
			ap.Decision != saga.ApprovalUndecided || rec.ExpiresAt != ap.Until || rec.CalledAt != 0 || rec.DownstreamKey != "" {
			t.Errorf("record %+v, approval %+v", rec, ap)
		}
	}}

// approveA applies alice's approve: the approved and started events in
// one decision, the call with the recorded arguments for A.
var approveA = step{at: 100, in: ptr(approveCmd("P")), verdict: saga.VerdictApprove,
	events: []saga.EventKind{saga.EvApproved, saga.EvStarted}, answers: []ans{approvedAck("P", false)},
	call: &wantCall{kind: saga.CallOriginal, tool: "transfer", id: "A", attempt: 1, args: "x"}, after: saga.StatusStarted,
	check: func(t *testing.T, rec *saga.Record) {
		ap := rec.Approval
		if ap == nil || ap.Decision != saga.ApprovalApproved || ap.By != "alice" || ap.Reason != "checked the invoice" || ap.CommandID != "P" ||
			ap.DecidedAt != t0+100 || rec.CalledAt != t0+100 || rec.PendingUntil != t0+100+pendingTTL || rec.Origin.IntentID != "A" ||
			!strings.HasPrefix(rec.DownstreamKey, "tk2_") {
			t.Errorf("record %+v, approval %+v", rec, ap)
		}
	}}

func TestApprovalHistories(t *testing.T) {
	okA := ans{to: "A", status: codes.StatusSucceeded, orig: "A", calledAt: t0 + 100, completedAt: t0 + 200, attempt: 1, result: "ok"}
	okB := okA
	okB.to, okB.replay = "B", true
	denied := func(to string) ans {
		return ans{to: to, status: codes.StatusFailed, replay: to != "A", orig: "A", completedAt: t0 + 100, attempt: 1, code: codes.ErrApprovalDenied}
	}
	lapsed := func(to string, at int64) ans {
		return ans{to: to, status: codes.StatusNotExecuted, replay: to != "A", orig: "A", completedAt: t0 + at, attempt: 1, code: codes.ErrApprovalLapsed}
	}
	refused := func(at int64, in saga.Input, after saga.Status) step {
		return step{at: at, in: &in, verdict: saga.VerdictReject, reason: codes.ReasonInvalidCommand,
			answers: []ans{rejected(in.IntentID, codes.ReasonInvalidCommand)}, after: after}
	}
	histories := []history{
		{name: "a duplicate waits with the request, other arguments conflict; the approval runs the call once and answers both", steps: []step{
			requestA,
			{at: 10, in: ptr(transfer("B", "x")), verdict: saga.VerdictPending, events: []saga.EventKind{saga.EvWaiting},
				answers: []ans{awaiting("B", 1)}, after: saga.StatusAwaitingApproval, check: wantWaiters("B")},
			{at: 20, in: ptr(transfer("A", "x")), verdict: saga.VerdictPending, answers: []ans{awaiting("A", 1)},
				after: saga.StatusAwaitingApproval, check: wantWaiters("B")},
			{at: 30, in: ptr(transfer("C", "y")), verdict: saga.VerdictConflict, events: []saga.EventKind{saga.EvConflicted},
				answers: []ans{{to: "C", status: codes.StatusConflict, orig: "A", attempt: 1, code: "args_mismatch"}}, after: saga.StatusAwaitingApproval},
			approveA,
			{at: 200, done: &saga.Completion{CallID: "A", Status: saga.StatusSucceeded, Result: []byte("ok")}, verdict: saga.VerdictRecord,
				events: []saga.EventKind{saga.EvOutcome}, answers: []ans{okA, okB}, after: saga.StatusSucceeded},
			{at: 300, in: ptr(transfer("D", "x")), verdict: saga.VerdictReplay, events: []saga.EventKind{saga.EvReplayed},
				answers: []ans{{to: "D", status: codes.StatusSucceeded, replay: true, orig: "A", calledAt: t0 + 100, completedAt: t0 + 200, attempt: 1, result: "ok"}},
				after:   saga.StatusSucceeded},
		}},
		{name: "an approve delivered twice has one effect and is answered twice", steps: []step{
			requestA, approveA,
			{at: 150, inFlight: true, in: ptr(approveCmd("P")), verdict: saga.VerdictReplay, answers: []ans{approvedAck("P", true)}, after: saga.StatusStarted},
			{at: 160, inFlight: true, in: ptr(denyCmd("P")), verdict: saga.VerdictReject, reason: codes.ReasonInvalidCommand,
				answers: []ans{rejected("P", codes.ReasonInvalidCommand)}, after: saga.StatusStarted},
			refused(170, approveCmd("P2"), saga.StatusStarted),
		}},
		{name: "a deny ends the key failed for every waiter; an approve after it is refused; a replay is failed", steps: []step{
			requestA,
			{at: 10, in: ptr(transfer("B", "x")), verdict: saga.VerdictPending, events: []saga.EventKind{saga.EvWaiting},
				answers: []ans{awaiting("B", 1)}, after: saga.StatusAwaitingApproval},
			{at: 100, in: ptr(denyCmd("N")), verdict: saga.VerdictDeny, events: []saga.EventKind{saga.EvDenied},
				answers: []ans{{to: "N", status: codes.StatusDenied, orig: "A", completedAt: t0 + 100, attempt: 1}, denied("A"), denied("B")},
				after:   saga.StatusFailed, check: func(t *testing.T, rec *saga.Record) {
					if rec.Err.Message != "alice denied the call: checked the invoice" || rec.ResolvedBy != "alice" || rec.ExpiresAt != t0+100+retention {
						t.Errorf("record %+v", rec)
					}
				}},
			{at: 110, in: ptr(denyCmd("N")), verdict: saga.VerdictReplay,
				answers: []ans{{to: "N", status: codes.StatusDenied, replay: true, orig: "A", attempt: 1}}, after: saga.StatusFailed},
			refused(120, approveCmd("P"), saga.StatusFailed),
			{at: 130, in: ptr(transfer("D", "x")), verdict: saga.VerdictReplay, events: []saga.EventKind{saga.EvReplayed},
				answers: []ans{denied("D")}, after: saga.StatusFailed},
		}},
		{name: "the sweep lapses a request at its deadline: not_executed for every waiter, the next intent asks again", steps: []step{
			requestA,
			{at: 10, in: ptr(transfer("B", "x")), verdict: saga.VerdictPending, events: []saga.EventKind{saga.EvWaiting},
				answers: []ans{awaiting("B", 1)}, after: saga.StatusAwaitingApproval},
			{at: approvalTTL - 1, expire: true, verdict: saga.VerdictStale, after: saga.StatusAwaitingApproval},
			{at: approvalTTL, expire: true, verdict: saga.VerdictRecord, events: []saga.EventKind{saga.EvApprovalLapsed},
				answers: []ans{lapsed("A", approvalTTL), lapsed("B", approvalTTL)}, after: saga.StatusNotExecuted},
			refused(approvalTTL+1, approveCmd("P"), saga.StatusNotExecuted),
			{at: approvalTTL + 2, in: ptr(transfer("E", "y")), verdict: saga.VerdictAwaitApproval, events: []saga.EventKind{saga.EvAwaitingApproval},
				answers: []ans{{to: "E", status: codes.StatusPending, orig: "E", attempt: 2, prev: codes.StatusNotExecuted, code: codes.ErrAwaitingApproval}},
				after:   saga.StatusAwaitingApproval, check: func(t *testing.T, rec *saga.Record) {
					if rec.Approval.Decision != saga.ApprovalUndecided || rec.Approval.Until != t0+approvalTTL+2+approvalTTL || string(rec.Args) != "y" {
						t.Errorf("the new request %+v, approval %+v", rec, rec.Approval)
					}
				}},
		}},
		{name: "a request past its deadline that the sweep missed lapses on the next intent, which asks again", steps: []step{
			requestA,
			refused(approvalTTL, approveCmd("P"), saga.StatusAwaitingApproval),
			{at: approvalTTL + 5, in: ptr(transfer("E", "x")), verdict: saga.VerdictAwaitApproval,
				events:  []saga.EventKind{saga.EvApprovalLapsed, saga.EvAwaitingApproval},
				answers: []ans{lapsed("A", approvalTTL+5), {to: "E", status: codes.StatusPending, orig: "E", attempt: 2, prev: codes.StatusNotExecuted, code: codes.ErrAwaitingApproval}},
				after:   saga.StatusAwaitingApproval},
		}},
		{name: "an approval of other arguments, of another request or without a record is refused", steps: []step{
			{at: 0, in: ptr(approveCmd("P0")), verdict: saga.VerdictReject, reason: codes.ReasonInvalidCommand,
				answers: []ans{rejected("P0", codes.ReasonInvalidCommand)}},
			requestA,
			refused(10, decide(saga.InputApprove, "P1", "A", hashOf("y")), saga.StatusAwaitingApproval),
			refused(20, decide(saga.InputApprove, "P2", "Z", hashOf("x")), saga.StatusAwaitingApproval),
			refused(30, decide(saga.InputDeny, "N1", "A", hashOf("y")), saga.StatusAwaitingApproval),
			{at: 40, in: ptr(decide(saga.InputApprove, "P3", "", nil)), verdict: saga.VerdictApprove,
				events: []saga.EventKind{saga.EvApproved, saga.EvStarted}, answers: []ans{{to: "P3", status: codes.StatusApproved, orig: "A", attempt: 1}},
				call: &wantCall{kind: saga.CallOriginal, tool: "transfer", id: "A", attempt: 1, args: "x"}, after: saga.StatusStarted},
		}},
		{name: "a request's deadline is the intent's deadline_ms when that is sooner", steps: []step{
			{at: 0, in: ptr(withDeadline(transfer("A", "x"), t0+1_000)), verdict: saga.VerdictAwaitApproval,
				events: []saga.EventKind{saga.EvAwaitingApproval}, answers: []ans{awaiting("A", 1)}, after: saga.StatusAwaitingApproval,
				check: func(t *testing.T, rec *saga.Record) {
					if rec.Approval.Until != t0+1_000 {
						t.Errorf("until %d", rec.Approval.Until-t0)
					}
				}},
			refused(1_000, approveCmd("P"), saga.StatusAwaitingApproval),
			{at: 1_000, expire: true, verdict: saga.VerdictRecord, events: []saga.EventKind{saga.EvApprovalLapsed},
				answers: []ans{lapsed("A", 1_000)}, after: saga.StatusNotExecuted},
		}},
		{name: "resolve and compensate do not apply to a key awaiting approval", steps: []step{
			requestA,
			refused(10, resolve("R", saga.StatusSucceeded, ""), saga.StatusAwaitingApproval),
			refused(20, compensate("K"), saga.StatusAwaitingApproval),
		}},
		{name: "an approved call that never reached its tool frees the key; the next intent asks again", steps: []step{
			requestA, approveA,
			{at: 200, done: &saga.Completion{CallID: "A", Status: saga.StatusNotExecuted, Err: &saga.Error{Code: "connect"}}, verdict: saga.VerdictRecord,
				events:  []saga.EventKind{saga.EvOutcome},
				answers: []ans{{to: "A", status: codes.StatusNotExecuted, orig: "A", calledAt: t0 + 100, completedAt: t0 + 200, attempt: 1, code: "connect"}},
				after:   saga.StatusNotExecuted},
			{at: 300, in: ptr(transfer("F", "x")), verdict: saga.VerdictAwaitApproval, events: []saga.EventKind{saga.EvAwaitingApproval},
				answers: []ans{{to: "F", status: codes.StatusPending, orig: "F", attempt: 2, prev: codes.StatusNotExecuted, code: codes.ErrAwaitingApproval}},
				after:   saga.StatusAwaitingApproval},
			refused(310, approveCmd("P"), saga.StatusAwaitingApproval), // the old approve names A's request
		}},
		{name: "after a crash between the approval and the call the key is in doubt, and a duplicate is parked", steps: []step{
			requestA, approveA,
			{at: 100 + pendingTTL, in: ptr(transfer("B", "x")), verdict: saga.VerdictPending, events: []saga.EventKind{saga.EvWaiting},
				answers: []ans{{to: "B", status: codes.StatusPending, replay: true, orig: "A", calledAt: t0 + 100, attempt: 1, code: codes.ErrInDoubt}},
				after:   saga.StatusStarted},
			refused(100+pendingTTL+1, approveCmd("P2"), saga.StatusStarted),
		}},
	}
	for _, h := range histories {
		t.Run(h.name, func(t *testing.T) { h.run(t) })
	}
}

// TestAwaitingAnswerSaysWhoAndUntilWhen: the answer of a key awaiting
// approval names who was asked and the deadline, in its message and (the
// deadline) as a field.
func TestAwaitingAnswerSaysWhoAndUntilWhen(t *testing.T) {
	env := saga.Env{Now: t0, Policy: policies}
	d := saga.Decide(nil, transfer("A", "x"), env)
	a := d.Answers[0]
	if a.ApprovalUntil != t0+approvalTTL || !strings.Contains(a.Err.Message, "alice, group:payments") ||
		!strings.Contains(a.Err.Message, "2023-11-14T22:23:20Z") {
		t.Fatalf("answer %+v: %s", a, a.Err.Message)
	}
	rec := saga.Apply(nil, d.Events[0])
	look := saga.Decide(rec, saga.Input{Type: saga.InputLookup, IntentID: "L", Tenant: tenant, Key: key, Tool: "transfer", Partition: 1, Owner: 1}, env)
	if got := look.Answers[0]; got.Status != codes.StatusPending || got.Err.Code != codes.ErrAwaitingApproval || got.ApprovalUntil != a.ApprovalUntil {
		t.Fatalf("lookup %+v", got)
	}
	env.Now = t0 + approvalTTL
	look = saga.Decide(rec, saga.Input{Type: saga.InputLookup, IntentID: "L", Tenant: tenant, Key: key, Tool: "transfer", Partition: 1, Owner: 1}, env)
	if got := look.Answers[0]; got.Status != codes.StatusNotExecuted || got.Err.Code != codes.ErrApprovalLapsed || len(look.Events) != 0 {
		t.Fatalf("lookup after the deadline %+v (events %v)", got, look.Events)
	}
}

// TestStartedWithoutApprovalDoesNotFold: the fold starts a call on a key
// awaiting approval only after an approved event of its request and
// digest, whatever a log holds.
func TestStartedWithoutApprovalDoesNotFold(t *testing.T) {
	env := saga.Env{Now: t0, Policy: policies}
	req := saga.Decide(nil, transfer("A", "x"), env).Events[0]
	rec := saga.Apply(nil, req)
	started := saga.Event{Kind: saga.EvStarted, Tenant: tenant, Key: key, At: t0 + 1, IntentID: "A", Tool: "transfer",
		ArgsHash: hashOf("x"), Args: []byte("x"), Attempt: 1, Waiter: &rec.Origin}
	if got := saga.Apply(rec.Clone(), started); got.Status != saga.StatusAwaitingApproval {
		t.Fatalf("started folded without an approval: %+v", got)
	}
	other := saga.Event{Kind: saga.EvApproved, Tenant: tenant, Key: key, At: t0 + 1, IntentID: "P", CallID: "A", ArgsHash: hashOf("y"), By: "mallory"}
	if got := saga.Apply(rec.Clone(), other); got.Approval.Decision != saga.ApprovalUndecided {
		t.Fatalf("an approval of another digest folded: %+v", got.Approval)
	}
	ok := other
	ok.ArgsHash = hashOf("x")
	approved := saga.Apply(rec.Clone(), ok)
	if got := saga.Apply(approved.Clone(), started); got.Status != saga.StatusStarted || got.Approval.By != "mallory" {
		t.Fatalf("the approved call did not start: %+v", got)
	}
	wrong := started
	wrong.IntentID = "B"
	if got := saga.Apply(approved.Clone(), wrong); got.Status != saga.StatusAwaitingApproval {
		t.Fatalf("another intent's call started on A's approval: %+v", got)
	}
}
