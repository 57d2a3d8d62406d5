package saga

import "github.com/atmostonce/toolexec/codes"

// decideLookup answers what the key's record says now: its outcome, or
// that its call is running or in doubt, or that there is no record (the
// key never called this tool, or expired). It records nothing, joins
// nothing and calls nothing, so its cost is one read of the view: the
// gateway's GET of a key asks this instead of folding a partition of the
// log. A key without a record is no bad input: its answer is a refusal
// (rejected, invalid_command, refusal codes.RefusalNoRecord) that is not
// dead-lettered.
func decideLookup(rec *Record, in Input, env Env) Decision {
	to := in.waiter(env.Now)
	if rec == nil || rec.expired(env.Now) || rec.Tool != in.Tool {
		a := Answer{To: to, Tenant: in.Tenant, Key: in.Key, Tool: in.Tool, Status: codes.StatusRejected,
			Err: &Error{Code: codes.ReasonInvalidCommand, Message: "nothing to look up: " + codes.RefusalNoRecordText, Refusal: codes.RefusalNoRecord}}
		return Decision{Verdict: VerdictLookup, Answers: []Answer{a}}
	}
	if rec.approvalLapsed(env.Now) { // what the sweep will record
		rec = Apply(rec.Clone(), lapse(rec, env, "").Events[0])
	}
	var a Answer
	switch rec.Status {
	case StatusStarted, StatusUnknown, StatusCompensating, StatusCompensationUnknown, StatusAwaitingApproval:
		a = pendingAnswer(rec, to)
		if rec.Status == StatusStarted && env.Now < rec.PendingUntil {
			a.Err = &Error{Code: codes.ErrRunning, Message: "the call is running; its outcome is not known yet"}
		}
	default:
		a = settledAnswer(rec, to)
	}
	a.WasReplay = true
	return Decision{Verdict: VerdictLookup, Answers: []Answer{a}}
}
