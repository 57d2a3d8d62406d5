package saga

import "github.com/atmostonce/toolexec/codes"

// Read-only tools have no effect to protect, so every intent calls and no
// key record is kept. What must survive a crash is the obligation to
// answer: the offset of a read-only intent commits with a read_started
// event, and the answer with a read_answered event, in one transaction
// each. A read_started without its read_answered is a read whose process
// died; the partition's next owner calls the tool again (harmless for a
// read) and answers. Without these events, a kill -9 during a read would
// lose its answer for good.

func decideReadOnly(in Input, env Env) Decision {
	if deadlinePassed(in, env) {
		return rejectInput(in, codes.ReasonDeadlineExceeded, "deadline_ms has passed; the call was not started")
	}
	if r := env.admit(in.Tenant, in.Tool); r != nil {
		return refuse(in, r, env)
	}
	w := in.waiter(env.Now)
	ev := Event{Kind: EvReadStarted, Tenant: in.Tenant, Key: in.Key, At: env.Now, IntentID: in.IntentID,
		Tool: in.Tool, Args: in.Args, RunID: in.RunID, ThreadID: in.ThreadID, Waiter: &w}
	return Decision{Verdict: VerdictExecute, Events: []Event{ev}, Call: ReadCall(ev, in.Traceparent)}
}

// ReadCall is the call a read_started event stands for: at decision time,
// and again when a new owner takes on the reads its predecessor left.
func ReadCall(ev Event, traceparent string) *Call {
	c := &Call{Kind: CallReadOnly, Tenant: ev.Tenant, Key: ev.Key, Tool: ev.Tool, CallID: ev.IntentID,
		Args: ev.Args, Traceparent: traceparent, Attempt: 1}
	if ev.Waiter != nil {
		c.Origin = *ev.Waiter
		if traceparent == "" {
			c.Traceparent = ev.Waiter.Traceparent
		}
	}
	return c
}

// CompleteRead records a read-only call's outcome and answers its intent.
// An outcome that stayed ambiguous after the adapter's retries is a plain
// failure: nothing waits on a read.
func CompleteRead(call Call, c Completion, env Env) Decision {
	status := c.Status
	if status == StatusUnknown {
		status = StatusFailed
	}
	ev := Event{Kind: EvReadAnswered, Tenant: call.Tenant, Key: call.Key, At: env.Now, IntentID: call.CallID,
		CallID: call.CallID, Status: status}
	a := Answer{To: call.Origin, Tenant: call.Tenant, Key: call.Key, Tool: call.Tool, Status: wireStatus(status),
		Result: c.Result, Err: c.Err, OriginalIntentID: call.CallID, CompletedAt: env.Now, Attempt: 1}
	return Decision{Verdict: VerdictRecord, Events: []Event{ev}, Answers: []Answer{a}}
}
