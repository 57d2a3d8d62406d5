package saga

import "github.com/atmostonce/toolexec/codes"

// answerFor fills the fields every answer about rec carries.
func answerFor(rec *Record, to Waiter, status string) Answer {
	a := Answer{To: to, Tenant: rec.Tenant, Key: rec.Key, Tool: rec.Tool, Status: status,
		OriginalIntentID: rec.Origin.IntentID, OriginalCalledAt: rec.CalledAt, Attempt: rec.Attempt}
	// The first terminal answer of the intent that started the call, or of
	// the command that started the compensation, is not a replay; every
	// other intent gets someone else's outcome.
	a.WasReplay = to.IntentID != rec.Origin.IntentID && (rec.Comp == nil || to.IntentID != rec.Comp.Origin.IntentID)
	if rec.PrevStatus == StatusNotExecuted {
		a.PreviousStatus = codes.StatusNotExecuted
	}
	return a
}

// settledAnswer is the final answer of a settled or not-executed key.
func settledAnswer(rec *Record, to Waiter) Answer {
	a := answerFor(rec, to, wireStatus(rec.Status))
	a.Result, a.Err, a.CompletedAt = rec.Result, rec.Err, rec.CompletedAt
	if rec.Comp != nil && rec.Status != StatusSucceeded && rec.Status != StatusFailed {
		a.CompletedAt = rec.Comp.CompletedAt
		if rec.Comp.Err != nil {
			a.Err = rec.Comp.Err
		}
	}
	return a
}

func pendingAnswer(rec *Record, to Waiter) Answer {
	if rec.Status == StatusAwaitingApproval {
		return awaitingAnswer(rec, to)
	}
	status := codes.StatusPending
	if rec.Status == StatusCompensating || rec.Status == StatusCompensationUnknown {
		status = codes.StatusCompensationPending
	}
	a := answerFor(rec, to, status)
	a.Err = &Error{Code: codes.ErrInDoubt, Message: "the first call may have reached the tool; the key is parked until it is settled, then every waiting intent gets the final answer"}
	return a
}

func wireStatus(s Status) string {
	switch s {
	case StatusSucceeded:
		return codes.StatusSucceeded
	case StatusFailed:
		return codes.StatusFailed
	case StatusNotExecuted:
		return codes.StatusNotExecuted
	case StatusCompensated:
		return codes.StatusCompensated
	case StatusCompensationFailed:
		return codes.StatusCompensationFailed
	case StatusCompensating, StatusCompensationUnknown:
		return codes.StatusCompensationPending
	}
	return codes.StatusPending
}
