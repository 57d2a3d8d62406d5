package saga

import (
	"bytes"
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/codes"
)

// Approval: a tool whose policy has ApprovalTTLMs > 0 is never called on
// an intent alone. The first intent of a key records awaiting_approval
// with the key's canonical arguments and their digest, and is answered
// pending (codes.ErrAwaitingApproval) at once; duplicates with the same
// arguments wait with it, other arguments are a conflict as ever. Then
// one of three things ends the request, each decided by the key's owner
// in its transaction, in the key's order:
//
//   - approve (an operator's command on the control topic): the owner
//     writes approved and then the call's started event, in one
//     transaction, and dispatches the call once it is committed, as for
//     any new call. The approval covers the recorded arguments only: the
//     command cannot carry others, and one that names another digest or
//     another request is refused.
//   - deny: the key ends failed (codes.ErrApprovalDenied), replayed as
//     failed for its retention.
//   - the deadline (the tool's approval_ttl, or the intent's deadline_ms
//     when sooner): the executor's sweep, or the next intent of the key,
//     ends it not_executed (codes.ErrApprovalLapsed); the key is free.
//
// An approve or deny after the request was decided is refused, unless it
// is the very command that decided it (the same id, delivered again),
// which is answered again and changes nothing.

// requestApproval records the first intent of a key whose tool needs a
// person's approval, and tells it so.
func requestApproval(rec *Record, in Input, pol Policy, env Env) Decision {
	if deadlinePassed(in, env) {
		return rejectInput(in, codes.ReasonDeadlineExceeded, "deadline_ms has passed; the call was not started")
	}
	attempt := 1
	if rec != nil {
		attempt = rec.Attempt + 1
	}
	until := env.Now + pol.ApprovalTTLMs
	if in.DeadlineMs > 0 && in.DeadlineMs < until {
		until = in.DeadlineMs // an approval after the caller's deadline could not start the call
	}
	w := in.waiter(env.Now)
	ev := Event{
		Kind: EvAwaitingApproval, Tenant: in.Tenant, Key: in.Key, At: env.Now, IntentID: in.IntentID,
		Tool: in.Tool, ArgsHash: in.ArgsHash, Args: in.Args, RetentionMs: pol.RetentionMs, Attempt: attempt,
		RunID: in.RunID, ThreadID: in.ThreadID, Waiter: &w, ApprovalUntil: until, Approvers: pol.Approvers,
	}
	next := Apply(rec.Clone(), ev)
	return Decision{Verdict: VerdictAwaitApproval, Events: []Event{ev}, Answers: []Answer{awaitingAnswer(next, w)}}
}

// decideApproval applies an approve or a deny.
func decideApproval(rec *Record, in Input, env Env) Decision {
	if rec == nil {
		return refuseCommand(in, codes.RefusalNoRecord, "nothing to decide: "+codes.RefusalNoRecordText)
	}
	if d, ok := repeatedDecision(rec, in, env); ok {
		return d
	}
	if why := undecidable(rec, in, env); why != "" {
		return rejectInput(in, codes.ReasonInvalidCommand, why)
	}
	if in.Type == InputDeny {
		return deny(rec, in, env)
	}
	return approve(rec, in, env)
}

// repeatedDecision answers the command that already decided the key's
// request, delivered again, as it was answered the first time: one
// effect, and every sender answered.
func repeatedDecision(rec *Record, in Input, env Env) (Decision, bool) {
	ap := rec.Approval
	if ap == nil || ap.CommandID != in.IntentID {
		return Decision{}, false
	}
	want, status := ApprovalApproved, codes.StatusApproved
	if in.Type == InputDeny {
		want, status = ApprovalDenied, codes.StatusDenied
	}
	if ap.Decision != want {
		return rejectInput(in, codes.ReasonInvalidCommand, fmt.Sprintf("command %q already %s this key's request", in.IntentID, ap.Decision)), true
	}
	a := decisionAck(rec, in, env, status)
	a.WasReplay = true
	return Decision{Verdict: VerdictReplay, Answers: []Answer{a}}, true
}

// undecidable says why the command cannot decide the key's request, or
// "" when it can.
func undecidable(rec *Record, in Input, env Env) string {
	ap := rec.Approval
	switch {
	case rec.Status != StatusAwaitingApproval && ap != nil && ap.Decision != ApprovalUndecided:
		return fmt.Sprintf("the key's request for approval was already %s (%s); an approval request is decided once", ap.Decision, decidedBy(ap))
	case rec.Status != StatusAwaitingApproval:
		return fmt.Sprintf("the key awaits no approval (it is %s)", rec.Status)
	case in.CallID != "" && in.CallID != rec.Origin.IntentID:
		return fmt.Sprintf("the command is for the request of intent %q, but the key's request is intent %q's", in.CallID, rec.Origin.IntentID)
	case len(in.ArgsHash) > 0 && !bytes.Equal(in.ArgsHash, rec.ArgsHash):
		return fmt.Sprintf("the command decides arguments of digest %x, but the key's request is for arguments of digest %x: an approval never covers other arguments",
			in.ArgsHash, rec.ArgsHash)
	case env.Now >= ap.Until:
		return "the request lapsed at " + utc(ap.Until) + " (its approval_ttl or the intent's deadline_ms); it ends not_executed"
	case env.InFlight:
		return "a call for this key is in flight in the executor"
	}
	return ""
}

func decidedBy(ap *Approval) string {
	if ap.Decision == ApprovalLapsed {
		return "no one decided before " + utc(ap.Until)
	}
	return fmt.Sprintf("by %s: %s", ap.By, ap.Reason)
}

// approve starts the call the request was for: the approved event, then
// the started event (the fence), in the same decision and so the same
// transaction. The call carries the recorded arguments, and the origin's
// trace context.
func approve(rec *Record, in Input, env Env) Decision {
	pol, ok := env.Policy(rec.Tool)
	if !ok {
		return rejectInput(in, codes.ReasonInvalidCommand, fmt.Sprintf("tool %q is not configured any more", rec.Tool))
	}
	ap := Event{Kind: EvApproved, Tenant: rec.Tenant, Key: rec.Key, At: env.Now, IntentID: in.IntentID,
		CallID: rec.Origin.IntentID, ArgsHash: rec.ArgsHash, By: in.By, Reason: in.Reason}
	origin := rec.Origin
	dk := callKey(rec.Tenant, rec.Tool, rec.Key, rec.Attempt, env.Now)
	st := Event{
		Kind: EvStarted, Tenant: rec.Tenant, Key: rec.Key, At: env.Now, IntentID: origin.IntentID,
		Tool: rec.Tool, ArgsHash: rec.ArgsHash, Args: rec.Args, PendingTTL: pol.PendingTTLMs,
		RetentionMs: pol.RetentionMs, Attempt: rec.Attempt, Waiter: &origin, DownstreamKey: dk,
	}
	call := &Call{Kind: CallOriginal, Tenant: rec.Tenant, Key: rec.Key, Tool: rec.Tool, CallID: origin.IntentID,
		Args: rec.Args, Traceparent: origin.Traceparent, Attempt: rec.Attempt, DecidedAt: env.Now, DownstreamKey: dk}
	ack := decisionAck(rec, in, env, codes.StatusApproved)
	return Decision{Verdict: VerdictApprove, Events: []Event{ap, st}, Answers: []Answer{ack}, Call: call}
}

// deny ends the key failed, answering the command and every intent that
// waits.
func deny(rec *Record, in Input, env Env) Decision {
	ev := Event{Kind: EvDenied, Tenant: rec.Tenant, Key: rec.Key, At: env.Now, IntentID: in.IntentID,
		CallID: rec.Origin.IntentID, ArgsHash: rec.ArgsHash, By: in.By, Reason: in.Reason}
	next := Apply(rec.Clone(), ev)
	ack := decisionAck(rec, in, env, codes.StatusDenied)
	ack.CompletedAt = env.Now
	return Decision{Verdict: VerdictDeny, Events: []Event{ev}, Answers: append([]Answer{ack}, answersOnChange(rec, next, nil)...)}
}

// decisionAck is the answer to the approve or deny command itself.
func decisionAck(rec *Record, in Input, env Env, status string) Answer {
	return Answer{To: in.waiter(env.Now), Tenant: rec.Tenant, Key: rec.Key, Tool: rec.Tool, Status: status,
		OriginalIntentID: rec.Origin.IntentID, Attempt: rec.Attempt}
}

// approvalLapsed reports whether rec is a request for approval past its
// deadline, which no approve may decide any more.
func (r *Record) approvalLapsed(now int64) bool {
	return r != nil && r.Status == StatusAwaitingApproval && r.Approval != nil && now >= r.Approval.Until
}

// lapse ends a request past its deadline not_executed (the sweep, or the
// key's next intent, by); its waiters are answered.
func lapse(rec *Record, env Env, by string) Decision {
	ev := Event{Kind: EvApprovalLapsed, Tenant: rec.Tenant, Key: rec.Key, At: env.Now, IntentID: by,
		CallID: rec.Origin.IntentID, Reason: "no one approved the call before " + utc(rec.Approval.Until)}
	next := Apply(rec.Clone(), ev)
	return Decision{Verdict: VerdictRecord, Events: []Event{ev}, Answers: answersOnChange(rec, next, nil)}
}

// awaitingAnswer is the pending answer of a key awaiting approval.
func awaitingAnswer(rec *Record, to Waiter) Answer {
	a := answerFor(rec, to, codes.StatusPending)
	asked := "any operator"
	if rec.Approval.Approvers != "" {
		asked = rec.Approval.Approvers
	}
	a.Err = &Error{Code: codes.ErrAwaitingApproval, Message: fmt.Sprintf(
		"the call waits for a person's approval (asked: %s) until %s; nothing ran. It runs once, with these arguments, when approved; "+
			"ask again later with the same key and arguments (never a new key) for the outcome", asked, utc(rec.Approval.Until))}
	a.ApprovalUntil = rec.Approval.Until
	return a
}

func utc(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }

// applyAwaiting folds a request for approval: a new record, like a
// started event's, but with no call. Only a key without a record, or one
// settled not_executed, can ask (decideCall).
func applyAwaiting(prev *Record, ev Event) *Record {
	if prev != nil && !prev.Status.Free() {
		return prev
	}
	rec := &Record{
		Tenant: ev.Tenant, Key: ev.Key, Tool: ev.Tool, ArgsHash: ev.ArgsHash, Args: ev.Args,
		Status: StatusAwaitingApproval, Attempt: ev.Attempt, RetentionMs: ev.RetentionMs, LastEventAt: ev.At,
		ExpiresAt: ev.ApprovalUntil, Approval: &Approval{RequestedAt: ev.At, Until: ev.ApprovalUntil, Approvers: ev.Approvers},
	}
	if ev.Waiter != nil {
		rec.Origin = *ev.Waiter
	}
	if prev != nil {
		rec.PrevStatus, rec.Waiters = StatusNotExecuted, prev.Waiters
	}
	return rec
}

// decides reports whether ev (approved, denied, lapsed) is about rec's
// request as it stands: the same intent's, undecided, and (approved,
// denied) for the recorded digest.
func decides(rec *Record, ev Event) bool {
	return rec != nil && rec.Status == StatusAwaitingApproval && rec.Approval != nil && rec.Approval.Decision == ApprovalUndecided &&
		rec.Origin.IntentID == ev.CallID && (ev.Kind == EvApprovalLapsed || bytes.Equal(ev.ArgsHash, rec.ArgsHash))
}

func applyDecision(rec *Record, ev Event) *Record {
	if !decides(rec, ev) {
		return rec
	}
	ap := rec.Approval
	ap.DecidedAt, ap.By, ap.Reason = ev.At, ev.By, ev.Reason
	switch ev.Kind {
	case EvApproved:
		ap.Decision, ap.CommandID = ApprovalApproved, ev.IntentID
		return rec // the started event that follows starts the call
	case EvDenied:
		ap.Decision, ap.CommandID = ApprovalDenied, ev.IntentID
		rec.Status, rec.ResolvedBy = StatusFailed, ev.By
		rec.Err = &Error{Code: codes.ErrApprovalDenied, Message: fmt.Sprintf("%s denied the call: %s", ev.By, ev.Reason)}
	default:
		ap.Decision = ApprovalLapsed
		rec.Status = StatusNotExecuted
		rec.Err = &Error{Code: codes.ErrApprovalLapsed, Message: ev.Reason + "; nothing ran and the key is free again"}
	}
	rec.CompletedAt, rec.ExpiresAt = ev.At, ev.At+rec.RetentionMs
	rec.OriginAnswered, rec.Waiters = true, nil
	return rec
}

// startsApproved reports whether a started event may fold onto prev, a
// key awaiting approval: only the call its approval was for, with the
// recorded arguments. The fold itself thus never lets a call start on a
// request no committed approve decided.
func startsApproved(prev *Record, ev Event) bool {
	return prev.Approval != nil && prev.Approval.Decision == ApprovalApproved &&
		prev.Origin.IntentID == ev.IntentID && bytes.Equal(prev.ArgsHash, ev.ArgsHash)
}
