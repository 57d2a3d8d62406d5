package saga

import (
	"bytes"
	"fmt"

	"github.com/atmostonce/toolexec/codes"
)

// Decide returns what to do with one intent or command given the key's
// record (nil when absent). It is pure: the same arguments always give the
// same decision, and rec is not modified.
func Decide(rec *Record, in Input, env Env) Decision {
	if in.Partition != in.Owner {
		return Decision{Verdict: VerdictForward, Detail: fmt.Sprintf("partition %d owns this key, not %d", in.Owner, in.Partition)}
	}
	switch in.Type {
	case InputCall:
		return decideCall(rec, in, env)
	case InputCompensate:
		return decideCompensate(rec, in, env)
	case InputResolve:
		return decideResolve(rec, in, env)
	case InputLookup:
		return decideLookup(rec, in, env)
	case InputApprove, InputDeny:
		return decideApproval(rec, in, env)
	}
	return rejectInput(in, codes.ReasonInvalidField, "unknown input type")
}

func decideCall(rec *Record, in Input, env Env) Decision {
	pol, ok := env.Policy(in.Tool)
	switch {
	case !ok:
		return rejectInput(in, codes.ReasonUnknownTool, unknownTool(in, env))
	case pol.MaxArgsBytes > 0 && len(in.Args) > pol.MaxArgsBytes:
		return rejectInput(in, codes.ReasonOversized, fmt.Sprintf("args are %d bytes, tool %q allows %d", len(in.Args), in.Tool, pol.MaxArgsBytes))
	case pol.ReadOnly:
		return decideReadOnly(in, env)
	}
	var prefix Decision
	if rec.expired(env.Now) {
		prefix.Events = append(prefix.Events, Event{Kind: EvExpired, Tenant: in.Tenant, Key: in.Key, At: env.Now, IntentID: in.IntentID, Reason: "retention passed"})
		rec = nil
	}
	if rec.approvalLapsed(env.Now) { // the sweep has not come by yet
		prefix = lapse(rec, env, in.IntentID)
		rec = Apply(rec.Clone(), prefix.Events[0])
	}
	switch {
	case (rec == nil || rec.Status.Free()) && pol.ApprovalTTLMs > 0:
		return prefixed(prefix, requestApproval(rec, in, pol, env))
	case rec == nil || rec.Status.Free():
		return prefixed(prefix, execute(rec, in, pol, env))
	}
	return prefixed(prefix, decideDuplicate(rec, in, env))
}

// unknownTool says that in's tool is not configured and, when one is
// near, which tool the caller may have meant.
func unknownTool(in Input, env Env) string {
	msg := fmt.Sprintf("tool %q is not configured", in.Tool)
	if env.NearestTool == nil {
		return msg
	}
	if near, ok := env.NearestTool(in.Tenant, in.Tool); ok {
		msg += fmt.Sprintf(": did you mean %s?", near)
	}
	return msg
}

// prefixed puts the events and answers of prefix ahead of d's. Without
// any, d is returned as it is: appending its events to a nil prefix
// copied them for every call (about 2% of a new call's CPU).
func prefixed(prefix Decision, d Decision) Decision {
	if len(prefix.Events) > 0 {
		d.Events = append(prefix.Events, d.Events...)
	}
	if len(prefix.Answers) > 0 {
		d.Answers = append(prefix.Answers, d.Answers...)
	}
	return d
}

func deadlinePassed(in Input, env Env) bool { return in.DeadlineMs > 0 && env.Now > in.DeadlineMs }

// execute starts a call: the started event is the fence. The call is made
// only after that event is committed.
func execute(rec *Record, in Input, pol Policy, env Env) Decision {
	if deadlinePassed(in, env) {
		return rejectInput(in, codes.ReasonDeadlineExceeded, "deadline_ms has passed; the call was not started")
	}
	if r := env.admit(in.Tenant, in.Tool); r != nil {
		return refuse(in, r, env)
	}
	attempt := 1
	if rec != nil {
		attempt = rec.Attempt + 1
	}
	w := in.waiter(env.Now)
	dk := callKey(in.Tenant, in.Tool, in.Key, attempt, env.Now)
	ev := Event{
		Kind: EvStarted, Tenant: in.Tenant, Key: in.Key, At: env.Now, IntentID: in.IntentID,
		Tool: in.Tool, ArgsHash: in.ArgsHash, Args: in.Args, PendingTTL: pol.PendingTTLMs,
		RetentionMs: pol.RetentionMs, Attempt: attempt, RunID: in.RunID, ThreadID: in.ThreadID, Waiter: &w,
		DownstreamKey: dk,
	}
	call := &Call{Kind: CallOriginal, Tenant: in.Tenant, Key: in.Key, Tool: in.Tool, CallID: in.IntentID,
		Args: in.Args, Traceparent: in.Traceparent, Attempt: attempt, DecidedAt: env.Now, DownstreamKey: dk}
	return Decision{Verdict: VerdictExecute, Events: []Event{ev}, Call: call}
}

// decideDuplicate handles a call for a key that already has a record.
func decideDuplicate(rec *Record, in Input, env Env) Decision {
	if rec.Origin.IntentID == in.IntentID && rec.Status == StatusStarted && env.InFlight {
		// The same emission delivered twice: it already waits as the origin.
		return Decision{Verdict: VerdictCoalesce}
	}
	if rec.Tool != in.Tool || !bytes.Equal(rec.ArgsHash, in.ArgsHash) {
		return conflict(rec, in, env)
	}
	switch {
	case rec.Status.Settled():
		return replay(rec, in, env)
	case rec.Status == StatusStarted && env.InFlight, rec.Status == StatusCompensating && env.InFlight:
		return wait(rec, in, env, VerdictCoalesce, EvCoalesced)
	default: // in doubt: started without a call running, unknown, or a compensation in doubt
		return wait(rec, in, env, VerdictPending, EvWaiting)
	}
}

func conflict(rec *Record, in Input, env Env) Decision {
	ev := Event{Kind: EvConflicted, Tenant: in.Tenant, Key: in.Key, At: env.Now, IntentID: in.IntentID, Tool: in.Tool, ArgsHash: in.ArgsHash}
	a := answerFor(rec, in.waiter(env.Now), codes.StatusConflict)
	a.Tool, a.WasReplay = in.Tool, false // nothing is replayed: the original's outcome is not disclosed
	a.Err = &Error{Code: "args_mismatch", Message: fmt.Sprintf("key was first used by intent %q with tool %q and other arguments", rec.Origin.IntentID, rec.Tool)}
	return Decision{Verdict: VerdictConflict, Events: []Event{ev}, Answers: []Answer{a}}
}

func replay(rec *Record, in Input, env Env) Decision {
	ev := Event{Kind: EvReplayed, Tenant: in.Tenant, Key: in.Key, At: env.Now, IntentID: in.IntentID}
	a := settledAnswer(rec, in.waiter(env.Now))
	a.WasReplay = true // even a re-delivery of the origin's own id is served from the record
	return Decision{Verdict: VerdictReplay, Events: []Event{ev}, Answers: []Answer{a}}
}

// wait registers in as a waiter for the key's final answer. An in-doubt key
// answers "pending" now as well, so the caller knows it is parked.
func wait(rec *Record, in Input, env Env, v Verdict, kind EventKind) Decision {
	if rec.hasWaiter(in.IntentID) {
		// A re-delivery of an intent that already waits: nothing new to
		// log, but a parked caller is told again that it is parked.
		d := Decision{Verdict: v}
		if v == VerdictPending {
			d.Answers = []Answer{pendingAnswer(rec, in.waiter(env.Now))}
		}
		return d
	}
	if len(rec.Waiters) >= env.maxWaiters() {
		return rejectInput(in, codes.ReasonInvalidCommand, fmt.Sprintf("more than %d intents already wait on this key; retry later", env.maxWaiters()))
	}
	w := in.waiter(env.Now)
	d := Decision{Verdict: v, Events: []Event{{Kind: kind, Tenant: in.Tenant, Key: in.Key, At: env.Now, IntentID: in.IntentID, Waiter: &w}}}
	if v == VerdictPending {
		d.Answers = []Answer{pendingAnswer(rec, w)}
	}
	return d
}

// refuseCommand is rejectInput of a command whose kind a caller acts on
// (codes.Refusal*): the answer carries the kind beside the message.
func refuseCommand(in Input, refusal, detail string) Decision {
	d := rejectInput(in, codes.ReasonInvalidCommand, detail)
	d.Answers[0].Err.Refusal = refusal
	return d
}

func rejectInput(in Input, reason, detail string) Decision {
	a := Answer{To: in.waiter(0), Tenant: in.Tenant, Key: in.Key, Tool: in.Tool, Status: codes.StatusRejected,
		Err: &Error{Code: reason, Message: detail}}
	return Decision{Verdict: VerdictReject, Reason: reason, Detail: detail, Answers: []Answer{a}}
}
