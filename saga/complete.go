package saga

import "github.com/atmostonce/toolexec/codes"

// Complete records the outcome of a finished call. A completion that no
// longer matches the key (its started event was never committed, or the
// key moved on) is stale and changes nothing.
func Complete(rec *Record, c Completion, env Env) Decision {
	if !current(rec, c) {
		return Decision{Verdict: VerdictStale}
	}
	kind := EvOutcome
	if c.Compensation {
		kind = EvCompensationOutcome
	}
	c = notExecutedTooLate(rec, c, env)
	ev := Event{Kind: kind, Tenant: rec.Tenant, Key: rec.Key, At: env.Now, IntentID: c.CallID,
		CallID: c.CallID, Status: c.Status, Result: c.Result, Err: c.Err}
	next := Apply(rec.Clone(), ev)
	return Decision{Verdict: VerdictRecord, Events: []Event{ev}, Answers: answersOnChange(rec, next, c.Err)}
}

func current(rec *Record, c Completion) bool {
	if rec == nil {
		return false
	}
	if c.Compensation {
		return rec.Status == StatusCompensating && rec.Comp != nil && rec.Comp.Origin.IntentID == c.CallID
	}
	return rec.Status == StatusStarted && rec.Origin.IntentID == c.CallID
}

// answersOnChange lists the answers a transition from prev to next owes:
// the final answer to everyone waiting when the key settles, and a
// "pending" to everyone waiting when it falls into doubt. cause is the
// error of the outcome, if any.
func answersOnChange(prev, next *Record, cause *Error) []Answer {
	switch {
	case next == nil:
		return nil
	case prev.Comp != nil && next.Comp == nil:
		return compensationNotExecutedAnswers(prev, next, cause)
	case prev.Status == next.Status:
		return nil
	case next.Status.Settled() || next.Status == StatusNotExecuted:
		return settleAnswers(prev, next)
	case next.Status == StatusUnknown || next.Status == StatusCompensationUnknown:
		return pendingAnswers(prev, next)
	}
	return nil
}

func settleAnswers(prev, next *Record) []Answer {
	var out []Answer
	if !prev.OriginAnswered {
		out = append(out, settledAnswer(next, prev.Origin))
	}
	if prev.Comp != nil {
		out = append(out, settledAnswer(next, prev.Comp.Origin))
	}
	for _, w := range prev.Waiters {
		out = append(out, settledAnswer(next, w))
	}
	return out
}

func pendingAnswers(prev, next *Record) []Answer {
	var out []Answer
	if !prev.OriginAnswered {
		out = append(out, pendingAnswer(next, prev.Origin))
	}
	if prev.Comp != nil {
		out = append(out, pendingAnswer(next, prev.Comp.Origin))
	}
	for _, w := range prev.Waiters {
		out = append(out, pendingAnswer(next, w))
	}
	return out
}

// compensationNotExecutedAnswers answers everyone who waited on a
// compensation that never reached its tool, once: the compensate commands
// get not_executed; the calls get the restored outcome when the key is
// settled and are told again that they are parked when it is in doubt.
func compensationNotExecutedAnswers(prev, next *Record, cause *Error) []Answer {
	out := []Answer{compensationNotExecuted(prev, prev.Comp.Origin, cause)}
	for _, w := range prev.Waiters {
		switch {
		case w.Type == InputCompensate.String():
			out = append(out, compensationNotExecuted(prev, w, cause))
		case next.Status.Settled():
			out = append(out, settledAnswer(next, w))
		default:
			out = append(out, pendingAnswer(next, w))
		}
	}
	return out
}

func compensationNotExecuted(rec *Record, to Waiter, cause *Error) Answer {
	a := answerFor(rec, to, codes.StatusNotExecuted)
	a.Err = &Error{Code: "compensation_not_executed", Message: "the compensating tool was never reached; the key is as before and the compensation may be sent again"}
	if cause != nil {
		a.Err.Message += ": " + cause.Message
	}
	return a
}

// Expire removes a settled key whose retention has passed, so the key is
// free again, and ends a request for approval past its deadline
// not_executed (approval.go). Keys in doubt never expire: they wait to be
// settled.
func Expire(rec *Record, env Env) Decision {
	if rec.approvalLapsed(env.Now) {
		return lapse(rec, env, "")
	}
	if !rec.expired(env.Now) {
		return Decision{Verdict: VerdictStale}
	}
	ev := Event{Kind: EvExpired, Tenant: rec.Tenant, Key: rec.Key, At: env.Now, Reason: "retention passed"}
	return Decision{Verdict: VerdictRecord, Events: []Event{ev}}
}

// notExecutedMarginMs: a not_executed recorded within this long before a
// call's PendingUntil (or a quarter of its pending_ttl, when that is
// shorter) is treated as recorded after it. Why: the reconciler compares
// PendingUntil with its own clock, which may run ahead of this executor's;
// NTP keeps hosts far closer than this. The quarter keeps a short
// pending_ttl (seconds, in tests) from leaving no time at all.
const notExecutedMarginMs = 5_000

// notExecutedTooLate turns a not_executed completion of a call whose tool
// the reconciler investigates by sending it again (Policy.Resent) into
// unknown, when it is recorded at or after the call's PendingUntil (less
// the margin). Past that time the reconciler may already have sent the
// call under the same downstream key, so "this executor never sent it"
// no longer means "it never ran"; recorded not_executed, the key would be
// free and the next call would run under a new downstream key: a second
// effect. In doubt instead, the reconciler settles it with the tool's own
// answer. Calls queued past their budget through a broker bounce are the
// common case: recorded not_executed after the reconciler's retry had
// made the effect, each would be a duplicate effect. It covers every late not_executed,
// whatever its cause: a queued call not sent, a drain, a commit delayed
// by an outage.
func notExecutedTooLate(rec *Record, c Completion, env Env) Completion {
	if c.Status != StatusNotExecuted || !resentTooLate(rec, c.Compensation, env) {
		return c
	}
	c.Status = StatusUnknown
	code, msg := "not_executed_too_late", "not sent by the executor, but only after its pending_ttl, when the reconciler may have sent it"
	if c.Err != nil {
		msg += " (" + c.Err.Code + ": " + c.Err.Message + ")"
	}
	c.Err = &Error{Code: code, Message: msg}
	return c
}
