package gateway

import (
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
	"github.com/atmostonce/toolexec/wire/jsonview"
)

// StatusRunning is the gateway's own status for a 202 without any answer:
// the call was taken (or is queued) and no answer came within the wait,
// and the key is not known to be in doubt. No wire answer has it.
const StatusRunning = "running"

// inDoubtMessage is the error text of a pending answer built from the log;
// it says what the executor's pending answer says.
const inDoubtMessage = "the first call may have reached the tool; the key is parked until it is settled, then every waiting intent gets the final answer"

// answerState says how a request ends.
type answerState int

const (
	stateDone    answerState = iota // a terminal answer: 200
	stateRunning                    // no answer yet: 202
	stateInDoubt                    // pending or compensation_pending: 202
)

// runningAnswer is the body of a 202 that has no answer from the executor.
func runningAnswer(in wire.Intent) *wire.Result {
	return &wire.Result{V: wire.Version, IntentID: in.ID, Type: in.Type, Tenant: in.Tenant, Key: in.Key, Tool: in.Tool, Status: StatusRunning}
}

// recordAnswer is the key's current answer as GET tells it: what a replay
// would answer (saga's settledAnswer), or what a duplicate would be told
// while the key is running or in doubt. now decides whether a started
// call without an outcome is still running (within its pending_ttl) or in
// doubt (past it: the reconciler's rule).
func recordAnswer(rec *saga.Record, now int64) (*wire.Result, answerState) {
	res := &wire.Result{V: wire.Version, IntentID: rec.Origin.IntentID, Type: wire.TypeCall, Tenant: rec.Tenant, Key: rec.Key,
		Tool: rec.Tool, WasReplay: true, OriginalIntentID: rec.Origin.IntentID, OriginalCalledAt: rec.CalledAt, Attempt: rec.Attempt}
	if rec.PrevStatus == saga.StatusNotExecuted {
		res.PreviousStatus = codes.StatusNotExecuted
	}
	switch rec.Status {
	case saga.StatusStarted:
		if now < rec.PendingUntil {
			res.Status, res.WasReplay = StatusRunning, false
			return res, stateRunning
		}
		return inDoubt(res, codes.StatusPending), stateInDoubt
	case saga.StatusUnknown:
		return inDoubt(res, codes.StatusPending), stateInDoubt
	case saga.StatusCompensating, saga.StatusCompensationUnknown:
		return inDoubt(res, codes.StatusCompensationPending), stateInDoubt
	case saga.StatusAwaitingApproval:
		res.Status, res.ApprovalUntil = codes.StatusPending, rec.Approval.Until
		res.Error = &wire.ErrorInfo{Code: codes.ErrAwaitingApproval, Message: "the call waits for a person's approval; nothing ran"}
		return res, stateInDoubt
	}
	settled(res, rec)
	return res, stateDone
}

func inDoubt(res *wire.Result, status string) *wire.Result {
	res.Status = status
	res.Error = &wire.ErrorInfo{Code: "in_doubt", Message: inDoubtMessage}
	return res
}

// settled fills a settled key's outcome the way the executor's replay
// does: a compensated key keeps the call's result and tells the
// compensation's time and error.
func settled(res *wire.Result, rec *saga.Record) {
	res.Status = wireStatus(rec.Status)
	res.CompletedAt = rec.CompletedAt
	if len(rec.Result) > 0 {
		res.Result = msgpack.RawMessage(rec.Result)
	}
	if rec.Err != nil {
		res.Error = &wire.ErrorInfo{Code: rec.Err.Code, Message: rec.Err.Message}
	}
	if rec.Comp != nil && rec.Status != saga.StatusSucceeded && rec.Status != saga.StatusFailed {
		res.CompletedAt = rec.Comp.CompletedAt
		if rec.Comp.Err != nil {
			res.Error = &wire.ErrorInfo{Code: rec.Comp.Err.Code, Message: rec.Comp.Err.Message}
		}
	}
}

func wireStatus(s saga.Status) string {
	switch s {
	case saga.StatusSucceeded:
		return codes.StatusSucceeded
	case saga.StatusFailed:
		return codes.StatusFailed
	case saga.StatusNotExecuted:
		return codes.StatusNotExecuted
	case saga.StatusCompensated:
		return codes.StatusCompensated
	case saga.StatusCompensationFailed:
		return codes.StatusCompensationFailed
	}
	return codes.StatusPending
}

// replyState classifies what send returned.
func replyState(r reply) answerState {
	switch {
	case r.done:
		return stateDone
	case r.res != nil:
		return stateInDoubt
	}
	return stateRunning
}

// answerJSON is an answer as the JSON body: the wire result with its
// msgpack-decoded result made JSON-able (jsonview.Value).
func answerJSON(res *wire.Result) *wire.Result {
	return jsonview.Value(res).(*wire.Result)
}
