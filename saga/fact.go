package saga

import (
	"fmt"

	"github.com/atmostonce/toolexec/codes"
)

// A member's facts: what the member that started a call knows of it and
// could not record itself (executor/facts.go keeps them and delivers
// them as resolves that name the attempt by its downstream key).

// decideFact settles a key by a member's fact about one attempt of its
// call or compensation: the outcome the member got from the tool after its
// partition moved, or the certainty that it never sent the call.
//
// It applies only while that very attempt is the key's current one and in
// doubt: the call (or compensation) the fact names by call id, started
// under the fact's downstream key. A call id alone does not name an
// attempt: an intent polled again after its started event's transaction
// aborted starts a new attempt with the same call id and a new downstream
// key, and a fact about the first must never settle the second.
//
// Unlike an investigation's resolve, a fact applies before the attempt's
// pending_ttl has passed: the attempt ended (or was never sent, and its
// member forgot it), so nothing of it can still reach the tool. The one
// exception is a not_executed of a tool the reconciler investigates by
// sending the call again (Policy.Resent), decided once its pending_ttl may
// have passed: the reconciler may have sent it since, so "its member never
// sent it" no longer means "it never ran" (as for a completion,
// notExecutedTooLate). The key stays in doubt and the reconciler settles
// it with the tool's own answer.
//
// A fact that does not apply is stale, not rejected: it is no bad input
// but a fact the key has moved past (its started event never committed,
// the attempt settled, or a fact delivered again), and nobody waits for
// an answer to it. A member keeps a not_executed fact for every call of a
// transaction whose end it could not learn, most of which aborted: a
// broker bounce in the middle of a large tick makes hundreds, which would
// otherwise be as many dead letters and answers. A resolve that names a
// downstream key and no call is malformed: rejected.
func decideFact(rec *Record, in Input, env Env) Decision {
	if in.CallID == "" {
		return rejectInput(in, codes.ReasonInvalidCommand, "a resolve that names a downstream key must name its call (call_id)")
	}
	if rec == nil {
		return stale("no such key: the call's started event never committed")
	}
	comp, current := factAttempt(rec, in)
	switch {
	case !current && factApplied(rec, in):
		return stale("the key holds this fact already: delivered again")
	case !current:
		return stale(factMovedOn(rec, in))
	case env.InFlight:
		return stale("a call for this key is in flight in the executor")
	case in.Outcome == StatusNotExecuted && resentTooLate(rec, comp, env):
		return stale("a not_executed fact that arrived once the call's pending_ttl may have passed: " +
			"the reconciler may have sent the call since, and settles it with the tool's answer")
	}
	if comp {
		return resolveCompensation(rec, in, env)
	}
	return resolveCall(rec, in, env)
}

func stale(detail string) Decision { return Decision{Verdict: VerdictStale, Detail: detail} }

// factAttempt reports whether the fact in names the key's current call or
// compensation in doubt, and which of the two (comp).
func factAttempt(rec *Record, in Input) (comp, current bool) {
	switch rec.Status {
	case StatusStarted, StatusUnknown:
		return false, rec.Origin.IntentID == in.CallID && rec.DownstreamKey == in.DownstreamKey
	case StatusCompensating, StatusCompensationUnknown:
		return true, rec.Comp != nil && rec.Comp.Origin.IntentID == in.CallID && rec.Comp.DownstreamKey == in.DownstreamKey
	}
	return false, false
}

// factApplied reports whether the key holds what the fact in says of its
// attempt: the fact was applied before.
func factApplied(rec *Record, in Input) bool {
	if rec.Comp != nil && rec.Comp.Origin.IntentID == in.CallID {
		want := map[Status]Status{StatusCompensated: StatusCompensated, StatusSucceeded: StatusCompensated,
			StatusCompensationFailed: StatusCompensationFailed, StatusFailed: StatusCompensationFailed}[in.Outcome]
		return rec.Comp.DownstreamKey == in.DownstreamKey && want != StatusNone && rec.Status == want
	}
	return rec.Origin.IntentID == in.CallID && rec.DownstreamKey == in.DownstreamKey && rec.Status == in.Outcome
}

func factMovedOn(rec *Record, in Input) string {
	return fmt.Sprintf("the fact is about call %q under downstream key %q, but the key moved on (current call %q under %q, %s)",
		in.CallID, in.DownstreamKey, rec.Origin.IntentID, rec.DownstreamKey, rec.Status)
}

// resentTooLate reports whether a not_executed of the key's call (comp:
// its compensation) comes too late to be believed: the tool is one the
// reconciler investigates by sending the call again, and its pending_ttl
// (less the margin, notExecutedMarginMs) has passed.
func resentTooLate(rec *Record, comp bool, env Env) bool {
	tool, until := rec.Tool, rec.PendingUntil
	if comp {
		tool, until = rec.Comp.Tool, compensationPendingUntil(rec.Comp, env)
	}
	pol, ok := env.Policy(tool)
	return ok && pol.Resent && env.Now >= until-min(notExecutedMarginMs, pol.PendingTTLMs/4)
}
