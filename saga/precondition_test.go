package saga_test

import (
	"testing"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
)

// forCall makes a command conditional on call id, as the reconciler sends it.
func forCall(in saga.Input, id string) saga.Input { in.CallID = id; return in }

// A command that names a call applies only while that call is the key's
// current one and in doubt: a reconciler acting on a view that went stale
// must not undo a success nor settle a newer call.
func TestCommandPreconditionOnCall(t *testing.T) {
	histories := []history{
		{name: "conditional compensate of a call in doubt runs", steps: []step{
			startA, unknownA,
			{at: 10, in: ptr(forCall(compensate("K"), "A")), verdict: saga.VerdictCompensate,
				events: []saga.EventKind{saga.EvCompensationStarted}, call: compensateK.call, after: saga.StatusCompensating},
		}},
		{name: "conditional compensate after the call succeeded is refused", steps: []step{
			startA, succeedA,
			{at: 10, in: ptr(forCall(compensate("K"), "A")), verdict: saga.VerdictReject, reason: codes.ReasonInvalidCommand,
				answers: []ans{rejected("K", codes.ReasonInvalidCommand)}, after: saga.StatusSucceeded},
		}},
		{name: "conditional compensate naming another call is refused", steps: []step{
			startA,
			{at: 100, in: ptr(forCall(compensate("K"), "OLD")), verdict: saga.VerdictReject, reason: codes.ReasonInvalidCommand,
				answers: []ans{rejected("K", codes.ReasonInvalidCommand)}, after: saga.StatusStarted},
		}},
		{name: "a re-delivered conditional compensate waits on its own compensation", steps: []step{
			startA, unknownA,
			{at: 10, in: ptr(forCall(compensate("K"), "A")), verdict: saga.VerdictCompensate,
				events: []saga.EventKind{saga.EvCompensationStarted}, call: compensateK.call, after: saga.StatusCompensating},
			{at: 20, in: ptr(forCall(compensate("K"), "A")), verdict: saga.VerdictPending,
				answers: []ans{{to: "K", status: codes.StatusCompensationPending, orig: "A", calledAt: t0, attempt: 1, code: "in_doubt"}},
				after:   saga.StatusCompensating},
		}},
		{name: "conditional resolve of the call in doubt settles it", steps: []step{
			startA, unknownA,
			{at: 200, in: ptr(forCall(resolve("R", saga.StatusSucceeded, "r"), "A")), verdict: saga.VerdictResolve,
				events: []saga.EventKind{saga.EvResolved},
				answers: []ans{resolvedAck("R", 200),
					{to: "A", status: codes.StatusSucceeded, orig: "A", calledAt: t0, completedAt: t0 + 200, attempt: 1, result: "r"}},
				after: saga.StatusSucceeded},
		}},
		{name: "conditional resolve naming another call is refused", steps: []step{
			startA, unknownA,
			{at: 200, in: ptr(forCall(resolve("R", saga.StatusNotExecuted, ""), "OLD")), verdict: saga.VerdictReject,
				reason: codes.ReasonInvalidCommand, answers: []ans{rejected("R", codes.ReasonInvalidCommand)}, after: saga.StatusUnknown},
		}},
		{name: "conditional resolve of a compensation names the compensation", steps: []step{
			startA, succeedA, compensateK,
			{at: 20, done: &saga.Completion{CallID: "K", Compensation: true, Status: saga.StatusUnknown},
				verdict: saga.VerdictRecord, events: []saga.EventKind{saga.EvCompensationOutcome},
				answers: []ans{{to: "K", status: codes.StatusCompensationPending, orig: "A", calledAt: t0, attempt: 1, code: "in_doubt"}},
				after:   saga.StatusCompensationUnknown},
			{at: 30, in: ptr(forCall(resolve("R1", saga.StatusCompensated, ""), "A")), verdict: saga.VerdictReject,
				reason: codes.ReasonInvalidCommand, answers: []ans{rejected("R1", codes.ReasonInvalidCommand)}, after: saga.StatusCompensationUnknown},
			{at: 40, in: ptr(forCall(resolve("R2", saga.StatusCompensated, ""), "K")), verdict: saga.VerdictResolve,
				events:  []saga.EventKind{saga.EvCompensationOutcome},
				answers: []ans{resolvedAck("R2", 40), {to: "K", status: codes.StatusCompensated, orig: "A", calledAt: t0, completedAt: t0 + 40, attempt: 1, result: "ok"}},
				after:   saga.StatusCompensated},
		}},
	}
	for _, h := range histories {
		t.Run(h.name, func(t *testing.T) { h.run(t) })
	}
}
