package saga

import (
	"fmt"

	"github.com/atmostonce/toolexec/codes"
)

// decideCompensate handles a compensate intent or command: undo the key's
// effect with the tool's compensate_with tool, under a downstream key of
// its own. Allowed when the effect happened or may have happened.
func decideCompensate(rec *Record, in Input, env Env) Decision {
	if rec == nil || rec.expired(env.Now) {
		return refuseCommand(in, codes.RefusalNoRecord, "nothing to compensate: "+codes.RefusalNoRecordText)
	}
	switch {
	case rec.Status == StatusCompensated || rec.Status == StatusCompensationFailed:
		return replay(rec, in, env)
	case rec.Status == StatusCompensating && env.InFlight:
		return wait(rec, in, env, VerdictCoalesce, EvCoalesced)
	case rec.Status == StatusCompensating || rec.Status == StatusCompensationUnknown:
		return wait(rec, in, env, VerdictPending, EvWaiting)
	case !callInDoubt(rec, in):
		return rejectInput(in, codes.ReasonInvalidCommand, movedOn(rec, in))
	case rec.Status == StatusStarted && env.InFlight:
		return rejectInput(in, codes.ReasonInvalidCommand, "the call is in flight; compensate after it settles")
	case mayStillLand(rec, env) && !in.Force:
		return refuseCommand(in, codes.RefusalMayStillLand, stillLanding(rec, env, "compensate"))
	case rec.Status == StatusSucceeded, rec.Status == StatusUnknown, rec.Status == StatusStarted:
		return startCompensation(rec, in, env)
	}
	return rejectInput(in, codes.ReasonInvalidCommand, fmt.Sprintf("nothing to compensate: the key is %s", rec.Status))
}

func startCompensation(rec *Record, in Input, env Env) Decision {
	pol, ok := env.Policy(rec.Tool)
	if !ok || pol.CompensateWith == "" {
		return rejectInput(in, codes.ReasonInvalidCommand, fmt.Sprintf("tool %q has no compensate_with", rec.Tool))
	}
	if r := env.admit(rec.Tenant, pol.CompensateWith); r != nil {
		return refuse(in, r, env)
	}
	w := in.waiter(env.Now)
	dk := callKey(rec.Tenant, pol.CompensateWith, rec.Key, rec.Attempt, env.Now)
	ev := Event{Kind: EvCompensationStarted, Tenant: rec.Tenant, Key: rec.Key, At: env.Now, IntentID: in.IntentID,
		Tool: pol.CompensateWith, Waiter: &w, By: in.By, Reason: in.Reason, DownstreamKey: dk,
		PendingTTL: compensationTTL(pol.CompensateWith, env), Forced: in.Force && mayStillLand(rec, env)}
	call := &Call{Kind: CallCompensation, Tenant: rec.Tenant, Key: rec.Key, Tool: pol.CompensateWith,
		CallID: in.IntentID, Args: rec.Args, Traceparent: in.Traceparent, Attempt: rec.Attempt, DecidedAt: env.Now,
		DownstreamKey: dk}
	return Decision{Verdict: VerdictCompensate, Events: []Event{ev}, Call: call}
}

// decideResolve settles a key in doubt by an operator's or the
// reconciler's word. It arrives only on the control topic.
func decideResolve(rec *Record, in Input, env Env) Decision {
	if in.DownstreamKey != "" {
		return decideFact(rec, in, env)
	}
	if rec == nil {
		return rejectInput(in, codes.ReasonInvalidCommand, "no such key")
	}
	if env.InFlight {
		return rejectInput(in, codes.ReasonInvalidCommand, "a call for this key is in flight in the executor; it settles by itself")
	}
	if rec.Status == StatusAwaitingApproval {
		return rejectInput(in, codes.ReasonInvalidCommand, "the key awaits a person's approval and nothing ran: approve or deny it")
	}
	if mayStillLand(rec, env) && !in.Force {
		return refuseCommand(in, codes.RefusalMayStillLand, stillLanding(rec, env, "resolve"))
	}
	switch rec.Status {
	case StatusStarted, StatusUnknown:
		if !callInDoubt(rec, in) {
			return rejectInput(in, codes.ReasonInvalidCommand, movedOn(rec, in))
		}
		return resolveCall(rec, in, env)
	case StatusCompensating, StatusCompensationUnknown:
		if in.CallID != "" && in.CallID != rec.Comp.Origin.IntentID {
			return rejectInput(in, codes.ReasonInvalidCommand, movedOn(rec, in))
		}
		return resolveCompensation(rec, in, env)
	}
	if rec.Status == in.Outcome {
		a := settledAnswer(rec, in.waiter(env.Now))
		a.Status, a.WasReplay = codes.StatusResolved, true
		return Decision{Verdict: VerdictReplay, Answers: []Answer{a}}
	}
	return rejectInput(in, codes.ReasonInvalidCommand, fmt.Sprintf("the key is already settled as %s", rec.Status))
}

func resolveCall(rec *Record, in Input, env Env) Decision {
	switch in.Outcome {
	case StatusSucceeded, StatusFailed, StatusNotExecuted:
	default:
		return rejectInput(in, codes.ReasonInvalidCommand, fmt.Sprintf("a call in doubt resolves to succeeded, failed or not_executed, not %s", in.Outcome))
	}
	ev := Event{Kind: EvResolved, Tenant: rec.Tenant, Key: rec.Key, At: env.Now, IntentID: in.IntentID,
		CallID: rec.Origin.IntentID, Status: in.Outcome, Result: in.Result, Err: in.Err, By: in.By, Reason: in.Reason,
		Forced: in.Force && mayStillLand(rec, env)}
	return settle(rec, in, env, ev)
}

func resolveCompensation(rec *Record, in Input, env Env) Decision {
	var st Status
	switch in.Outcome {
	case StatusCompensated, StatusSucceeded:
		st = StatusSucceeded
	case StatusCompensationFailed, StatusFailed:
		st = StatusFailed
	case StatusNotExecuted:
		st = StatusNotExecuted
	default:
		return rejectInput(in, codes.ReasonInvalidCommand, fmt.Sprintf("a compensation in doubt resolves to compensated, compensation_failed or not_executed, not %s", in.Outcome))
	}
	ev := Event{Kind: EvCompensationOutcome, Tenant: rec.Tenant, Key: rec.Key, At: env.Now, IntentID: in.IntentID,
		CallID: rec.Comp.Origin.IntentID, Status: st, Result: in.Result, Err: in.Err, By: in.By, Reason: in.Reason,
		Forced: in.Force && mayStillLand(rec, env)}
	return settle(rec, in, env, ev)
}

// settle logs ev, answers the command itself and, when ev settles the key,
// everyone who waits.
func settle(rec *Record, in Input, env Env, ev Event) Decision {
	next := Apply(rec.Clone(), ev)
	ack := Answer{To: in.waiter(env.Now), Tenant: rec.Tenant, Key: rec.Key, Tool: rec.Tool, Status: codes.StatusResolved,
		OriginalIntentID: rec.Origin.IntentID, OriginalCalledAt: rec.CalledAt, CompletedAt: env.Now, Attempt: rec.Attempt}
	d := Decision{Verdict: VerdictResolve, Events: []Event{ev}, Answers: []Answer{ack}}
	d.Answers = append(d.Answers, answersOnChange(rec, next, ev.Err)...)
	return d
}

// callInDoubt checks a command's CallID precondition against a key that is
// not compensating: true when the command is unconditional, or names the
// key's current call and that call is in doubt (started or unknown).
func callInDoubt(rec *Record, in Input) bool {
	if in.CallID == "" {
		return true
	}
	return rec.Origin.IntentID == in.CallID && (rec.Status == StatusStarted || rec.Status == StatusUnknown)
}

func movedOn(rec *Record, in Input) string {
	return fmt.Sprintf("the command is for call %q, but the key moved on (current call %q, %s)", in.CallID, rec.Origin.IntentID, rec.Status)
}

// mayStillLand reports whether the key's call (or compensation) in doubt
// may still reach its tool: until its PendingUntil an executor may still
// send it (a call queued for dispatch, or a zombie's, is sent only within
// that budget, see tools.Request.Decided), and no command may settle or
// undo it before then without Force.
//
// Why: the saga's only guard was env.InFlight, which covers
// this process alone. After a drain timeout, or on a zombie, a call can
// land until its decision time plus pending_ttl. An agent's compensate
// then ran the undo before the effect, and an operator's "resolve
// not_executed" freed the key for a duplicate that ran the tool again.
func mayStillLand(rec *Record, env Env) bool {
	switch rec.Status {
	case StatusStarted, StatusUnknown:
		return env.Now < rec.PendingUntil
	case StatusCompensating, StatusCompensationUnknown:
		return rec.Comp != nil && env.Now < compensationPendingUntil(rec.Comp, env)
	}
	return false
}

// compensationPendingUntil is when a compensation in doubt can no longer
// reach its tool. Records written before it was kept take the
// compensating tool's policy.
func compensationPendingUntil(c *Compensation, env Env) int64 {
	if c.PendingUntil > 0 {
		return c.PendingUntil
	}
	return c.StartedAt + compensationTTL(c.Tool, env)
}

func compensationTTL(tool string, env Env) int64 {
	pol, ok := env.Policy(tool)
	if !ok {
		return 0
	}
	return pol.PendingTTLMs
}

func stillLanding(rec *Record, env Env, what string) string {
	until := rec.PendingUntil
	if rec.Comp != nil && (rec.Status == StatusCompensating || rec.Status == StatusCompensationUnknown) {
		until = compensationPendingUntil(rec.Comp, env)
	}
	return fmt.Sprintf("the key is %s and "+codes.RefusalMayStillLandText+" for %d ms (until its pending_ttl passes); "+
		"%s after that, or force it (an operator, on the control topic)", rec.Status, until-env.Now, what)
}
