package saga_test

import (
	"testing"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
)

// lastCallDK runs steps (decisions and completions only) and returns the
// downstream key of the last call one of them started: what a member's
// fact about that call names.
func lastCallDK(t *testing.T, steps ...step) string {
	t.Helper()
	var rec *saga.Record
	dk := ""
	for _, s := range steps {
		env := saga.Env{Now: t0 + s.at, InFlight: s.inFlight, Policy: policies}
		var d saga.Decision
		if s.in != nil {
			d = saga.Decide(rec, *s.in, env)
		} else {
			d = saga.Complete(rec, *s.done, env)
		}
		if d.Call != nil {
			dk = d.Call.DownstreamKey
		}
		for _, ev := range d.Events {
			rec = saga.Apply(rec, ev)
		}
	}
	if dk == "" {
		t.Fatal("no call started")
	}
	return dk
}

// fact is a member's fact about call callID's attempt under dk, as the
// executor delivers it: by the executor, unforced, with its error.
func fact(id, callID, dk string, outcome saga.Status, result string) saga.Input {
	in := resolve(id, outcome, result)
	in.By, in.Reason, in.Force, in.CallID, in.DownstreamKey = "executor", "a member's fact", false, callID, dk
	if outcome == saga.StatusNotExecuted {
		in.Err = &saga.Error{Code: codes.ErrNotSent, Message: "not sent"}
	}
	return in
}

func TestMemberFacts(t *testing.T) {
	dkA := lastCallDK(t, startA)
	startA10 := step{at: 10, in: ptr(call("A", "x")), verdict: saga.VerdictExecute, events: []saga.EventKind{saga.EvStarted},
		call: &wantCall{kind: saga.CallOriginal, tool: "charge", id: "A", attempt: 1, args: "x"}, after: saga.StatusStarted}
	coalesceB := step{at: 2, inFlight: true, in: ptr(call("B", "x")), verdict: saga.VerdictCoalesce,
		events: []saga.EventKind{saga.EvCoalesced}, after: saga.StatusStarted}
	orphanA := step{at: 20, orphan: true, verdict: saga.VerdictRecord, events: []saga.EventKind{saga.EvOutcome},
		answers: []ans{pendingFor("A"), pendingFor("B")}, after: saga.StatusUnknown}
	native := callTool("A", "native", "x")
	startNative := step{at: 0, in: &native, verdict: saga.VerdictExecute, events: []saga.EventKind{saga.EvStarted},
		call: &wantCall{kind: saga.CallOriginal, tool: "native", id: "A", attempt: 1, args: "x"}, after: saga.StatusStarted}
	dkNative := lastCallDK(t, startNative)
	dkK := lastCallDK(t, startA, succeedA, compensateK)
	notSent := func(to string, at int64, replay bool) ans {
		return ans{to: to, status: codes.StatusNotExecuted, replay: replay, orig: "A", calledAt: t0, completedAt: t0 + at, attempt: 1, code: codes.ErrNotSent}
	}
	histories := []history{
		{name: "a fact settles its call within the pending_ttl, unforced", steps: []step{
			startA,
			{at: 50, in: ptr(fact("F", "A", dkA, saga.StatusSucceeded, "r")), verdict: saga.VerdictResolve,
				events: []saga.EventKind{saga.EvResolved},
				answers: []ans{resolvedAck("F", 50),
					{to: "A", status: codes.StatusSucceeded, orig: "A", calledAt: t0, completedAt: t0 + 50, attempt: 1, result: "r"}},
				after: saga.StatusSucceeded},
		}},
		{name: "a fact about an earlier attempt of the same call is stale", steps: []step{
			// The started event of the attempt at 0 was aborted; the same
			// intent, polled again, started the attempt at 10.
			startA10,
			{at: 20, in: ptr(fact("F", "A", dkA, saga.StatusNotExecuted, "")), verdict: saga.VerdictStale, after: saga.StatusStarted},
		}},
		{name: "a fact of a key that moved on is stale", steps: []step{
			startA, succeedA,
			{at: 20, in: ptr(fact("F", "A", dkA, saga.StatusNotExecuted, "")), verdict: saga.VerdictStale, after: saga.StatusSucceeded},
		}},
		{name: "a fact delivered twice is applied once", steps: []step{
			startA,
			{at: 50, in: ptr(fact("F", "A", dkA, saga.StatusFailed, "")), verdict: saga.VerdictResolve,
				events: []saga.EventKind{saga.EvResolved},
				answers: []ans{resolvedAck("F", 50),
					{to: "A", status: codes.StatusFailed, orig: "A", calledAt: t0, completedAt: t0 + 50, attempt: 1}},
				after: saga.StatusFailed},
			{at: 60, in: ptr(fact("F", "A", dkA, saga.StatusFailed, "")), verdict: saga.VerdictStale, after: saga.StatusFailed},
		}},
		{name: "an orphaned key tells its waiters, then a not_executed fact answers them", steps: []step{
			startA, coalesceB, orphanA,
			{at: 30, in: ptr(fact("F", "A", dkA, saga.StatusNotExecuted, "")), verdict: saga.VerdictResolve,
				events:  []saga.EventKind{saga.EvResolved},
				answers: []ans{resolvedAck("F", 30), notSent("A", 30, false), notSent("B", 30, true)},
				after:   saga.StatusNotExecuted},
		}},
		{name: "a fact while a call of the key runs here is stale", steps: []step{
			startA,
			{at: 50, inFlight: true, in: ptr(fact("F", "A", dkA, saga.StatusSucceeded, "")), verdict: saga.VerdictStale, after: saga.StatusStarted},
		}},
		{name: "a fact without its call is rejected", steps: []step{
			startA,
			{at: 50, in: ptr(fact("F", "", dkA, saga.StatusSucceeded, "")), verdict: saga.VerdictReject,
				reason: codes.ReasonInvalidCommand, answers: []ans{rejected("F", codes.ReasonInvalidCommand)}, after: saga.StatusStarted},
		}},
		{name: "an early not_executed of a resent tool applies", steps: []step{
			startNative,
			{at: 1000, in: ptr(fact("F", "A", dkNative, saga.StatusNotExecuted, "")), verdict: saga.VerdictResolve,
				events:  []saga.EventKind{saga.EvResolved},
				answers: []ans{resolvedAck("F", 1000), notSent("A", 1000, false)},
				after:   saga.StatusNotExecuted},
		}},
		{name: "a late not_executed of a resent tool is stale", steps: []step{
			// 30 s pending_ttl, 5 s margin: from 25 s the reconciler may
			// have sent the call again.
			startNative,
			{at: 25_000, in: ptr(fact("F", "A", dkNative, saga.StatusNotExecuted, "")), verdict: saga.VerdictStale, after: saga.StatusStarted},
		}},
		{name: "a late outcome of a resent tool applies", steps: []step{
			startNative,
			{at: 40_000, in: ptr(fact("F", "A", dkNative, saga.StatusSucceeded, "r")), verdict: saga.VerdictResolve,
				events: []saga.EventKind{saga.EvResolved},
				answers: []ans{resolvedAck("F", 40_000),
					{to: "A", status: codes.StatusSucceeded, orig: "A", calledAt: t0, completedAt: t0 + 40_000, attempt: 1, result: "r"}},
				after: saga.StatusSucceeded},
		}},
		{name: "a fact settles an orphaned compensation", steps: []step{
			startA, succeedA, compensateK,
			{at: 15, orphan: true, verdict: saga.VerdictRecord, events: []saga.EventKind{saga.EvCompensationOutcome},
				answers: []ans{{to: "K", status: codes.StatusCompensationPending, orig: "A", calledAt: t0, attempt: 1, code: codes.ErrInDoubt}},
				after:   saga.StatusCompensationUnknown},
			{at: 20, in: ptr(fact("F", "A", dkK, saga.StatusCompensated, "")), verdict: saga.VerdictStale, after: saga.StatusCompensationUnknown},
			{at: 30, in: ptr(fact("F", "K", dkK, saga.StatusCompensated, "")), verdict: saga.VerdictResolve,
				events: []saga.EventKind{saga.EvCompensationOutcome},
				answers: []ans{resolvedAck("F", 30),
					{to: "K", status: codes.StatusCompensated, orig: "A", calledAt: t0, completedAt: t0 + 30, attempt: 1, result: "ok"}},
				after: saga.StatusCompensated},
			{at: 40, in: ptr(fact("F", "K", dkK, saga.StatusCompensated, "")), verdict: saga.VerdictStale, after: saga.StatusCompensated},
		}},
		{name: "a fact of a key that has no record is stale", steps: []step{
			{at: 50, in: ptr(fact("F", "A", dkA, saga.StatusNotExecuted, "")), verdict: saga.VerdictStale},
		}},
		{name: "a settled key is not orphaned", steps: []step{
			startA, succeedA,
			{at: 20, orphan: true, verdict: saga.VerdictStale, after: saga.StatusSucceeded},
		}},
		{name: "an unknown key is not orphaned again", steps: []step{
			startA, coalesceB, orphanA,
			{at: 30, orphan: true, verdict: saga.VerdictStale, after: saga.StatusUnknown},
		}},
	}
	for _, h := range histories {
		t.Run(h.name, func(t *testing.T) { h.run(t) })
	}
}
