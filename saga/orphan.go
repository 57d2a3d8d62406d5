package saga

import "github.com/atmostonce/toolexec/codes"

// Orphaned records that no call runs for a key whose call (or
// compensation) is started: its owner found it so after a restore, with
// no call of its own running for it. The member that started it lost the
// partition, stopped, or never sent it; only its facts (fact.go) or an
// investigation can settle it now.
//
// Why it is recorded: a started key with no call running is in doubt, but
// only the intents that arrive from now on are told so (answered pending
// as they come). The intent that started the call, and the duplicates
// that joined it while it ran, wait for the final answer and would hear
// nothing until the key is settled: for an irreversible tool, not before
// an operator acts. An unknown outcome tells each of them, once, that the
// key is in doubt (answersOnChange). It changes nothing else: a key in
// doubt is started or unknown alike for every decision, for the
// reconciler (the same deadline, PendingUntil) and for a member's fact.
func Orphaned(rec *Record, env Env) Decision {
	err := &Error{Code: codes.ErrNoCallRunning, Message: "the member that started the call lost its partition or stopped before recording an outcome; the key is in doubt until settled"}
	var ev Event
	switch {
	case rec == nil:
		return Decision{Verdict: VerdictStale}
	case rec.Status == StatusStarted:
		ev = Event{Kind: EvOutcome, CallID: rec.Origin.IntentID}
	case rec.Status == StatusCompensating && rec.Comp != nil:
		ev = Event{Kind: EvCompensationOutcome, CallID: rec.Comp.Origin.IntentID}
	default:
		return Decision{Verdict: VerdictStale}
	}
	ev.Tenant, ev.Key, ev.At, ev.IntentID, ev.Status, ev.Err = rec.Tenant, rec.Key, env.Now, ev.CallID, StatusUnknown, err
	next := Apply(rec.Clone(), ev)
	return Decision{Verdict: VerdictRecord, Events: []Event{ev}, Answers: answersOnChange(rec, next, err)}
}
