package saga

// Apply folds one event into rec and returns the new record; nil means the
// key has no record (it expired). rec may be modified and must not be
// shared: pass a Clone when the old value is still needed.
//
// Apply is total: an event that does not fit the record (an outcome for a
// call that is no longer current, say a duplicate written after an
// unconfirmed commit) leaves the record as it is. That keeps a restore
// deterministic whatever the log holds.
//
// Audit-only facts (replayed, conflicted) leave the record as it is,
// LastEventAt included: a member does not rewrite a record for them, and
// a restore must fold them to the same bytes.
func Apply(rec *Record, ev Event) *Record {
	if ev.Kind.IsRead() || ev.Kind.AuditOnly() {
		return rec // about one read-only call, or an audit fact only
	}
	if rec != nil {
		rec.LastEventAt = ev.At
	}
	switch ev.Kind {
	case EvStarted:
		return applyStarted(rec, ev)
	case EvOutcome, EvResolved:
		return applyOutcome(rec, ev)
	case EvCoalesced, EvWaiting:
		return applyWaiter(rec, ev)
	case EvCompensationStarted:
		return applyCompensationStarted(rec, ev)
	case EvCompensationOutcome:
		return applyCompensationOutcome(rec, ev)
	case EvExpired:
		return nil
	case EvSnapshot:
		return ev.Snapshot.Clone()
	case EvAwaitingApproval:
		return applyAwaiting(rec, ev)
	case EvApproved, EvDenied, EvApprovalLapsed:
		return applyDecision(rec, ev)
	}
	return rec // an unknown kind (Check refuses it before a fold)
}

func applyStarted(prev *Record, ev Event) *Record {
	if prev != nil && prev.Status == StatusAwaitingApproval && !startsApproved(prev, ev) {
		return prev
	}
	rec := &Record{
		Tenant: ev.Tenant, Key: ev.Key, Tool: ev.Tool, ArgsHash: ev.ArgsHash, Args: ev.Args,
		Status: StatusStarted, Attempt: ev.Attempt, CalledAt: ev.At, PendingUntil: ev.At + ev.PendingTTL,
		RetentionMs: ev.RetentionMs, LastEventAt: ev.At, DownstreamKey: ev.DownstreamKey,
	}
	if ev.Waiter != nil {
		rec.Origin = *ev.Waiter
	}
	if prev != nil && prev.Status == StatusNotExecuted {
		rec.PrevStatus = StatusNotExecuted
		rec.Waiters = prev.Waiters
	}
	if prev != nil && prev.Status == StatusAwaitingApproval {
		rec.PrevStatus, rec.Waiters, rec.Approval = prev.PrevStatus, prev.Waiters, prev.Approval
	}
	return rec
}

func applyOutcome(rec *Record, ev Event) *Record {
	if rec == nil || rec.Origin.IntentID != ev.CallID {
		return rec
	}
	if rec.Status != StatusStarted && !(rec.Status == StatusUnknown && ev.Kind == EvResolved) {
		return rec
	}
	rec.Status, rec.Result, rec.Err = ev.Status, ev.Result, ev.Err
	if ev.Kind == EvResolved {
		rec.ResolvedBy = ev.By
	}
	if ev.Status == StatusUnknown {
		return rec // still in doubt: everyone keeps waiting
	}
	rec.CompletedAt, rec.ExpiresAt = ev.At, ev.At+rec.RetentionMs
	rec.OriginAnswered, rec.Waiters = true, nil
	return rec
}

func applyWaiter(rec *Record, ev Event) *Record {
	if rec == nil || ev.Waiter == nil || rec.hasWaiter(ev.Waiter.IntentID) {
		return rec
	}
	rec.Waiters = append(rec.Waiters, *ev.Waiter)
	return rec
}

func applyCompensationStarted(rec *Record, ev Event) *Record {
	if rec == nil || rec.Status == StatusCompensating {
		return rec
	}
	comp := &Compensation{Tool: ev.Tool, StartedAt: ev.At, PrevStatus: rec.Status, DownstreamKey: ev.DownstreamKey}
	if ev.PendingTTL > 0 {
		comp.PendingUntil = ev.At + ev.PendingTTL
	}
	if ev.Waiter != nil {
		comp.Origin = *ev.Waiter
	}
	rec.Comp, rec.Status = comp, StatusCompensating
	return rec
}

// waitersAfterNotExecuted keeps the calls that still wait on a key whose
// compensation never reached its tool: none when the key is settled.
func waitersAfterNotExecuted(ws []Waiter, restored Status) []Waiter {
	if restored.Settled() {
		return nil
	}
	var keep []Waiter
	for _, w := range ws {
		if w.Type != InputCompensate.String() {
			keep = append(keep, w)
		}
	}
	return keep
}

func applyCompensationOutcome(rec *Record, ev Event) *Record {
	if rec == nil || rec.Comp == nil || rec.Comp.Origin.IntentID != ev.CallID {
		return rec
	}
	if rec.Status != StatusCompensating && rec.Status != StatusCompensationUnknown {
		return rec
	}
	rec.Comp.Result, rec.Comp.Err = ev.Result, ev.Err
	switch ev.Status {
	case StatusSucceeded:
		rec.Status = StatusCompensated
	case StatusFailed:
		rec.Status = StatusCompensationFailed
	case StatusUnknown:
		rec.Status = StatusCompensationUnknown
		return rec
	case StatusNotExecuted:
		// The compensation never reached its tool: the key is as before.
		// Its waiting commands are answered not_executed; the calls
		// that waited are answered too if the key is settled.
		rec.Status, rec.Comp = rec.Comp.PrevStatus, nil
		rec.Waiters = waitersAfterNotExecuted(rec.Waiters, rec.Status)
		return rec
	}
	rec.Comp.CompletedAt = ev.At
	rec.ExpiresAt = ev.At + rec.RetentionMs
	rec.OriginAnswered, rec.Waiters = true, nil
	return rec
}

// Snapshot is the event that restates rec whole (snapshot rounds). A fold
// of it gives rec back: Apply(anything, Snapshot(rec, at)) equals rec.
func Snapshot(rec *Record, at int64) Event {
	return Event{Kind: EvSnapshot, Tenant: rec.Tenant, Key: rec.Key, At: at, Snapshot: rec.Clone()}
}
