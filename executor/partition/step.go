package partition

import (
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// ErrView wraps a read of the view that failed: the member must stop (its
// view is a local store; nothing decided on a partial read can stand).
var ErrView = fmt.Errorf("partition: view read failed")

// stepper holds the work of one Step: the decisions of one tick (the
// executor loop's poll, decide, commit) while it is being made.
type stepper struct {
	c      *Core
	now    time.Time
	nowMs  int64
	poll   *Poll
	rd     *Decisions
	done   map[string]bool // routing keys whose call this tick records
	origin Origin          // what the tick is producing records for right now
}

// Step decides one tick: every finished call (Finished), a step of the
// walk of orphaned keys after a restore (orphans.go: before the records,
// so that a record of such a key is told it is in doubt once), then every
// polled record in order, then the sweep of expired keys and a step of
// the snapshot round. If a partition the poll needs is not restored, the
// Decisions only names it (Restore) and nothing changes. The error is a
// failed read of the view (ErrView): fatal.
//
// Until the Decisions is acknowledged (Committed, Aborted or Skipped) the
// core must not be stepped again.
func (c *Core) Step(now time.Time, b *Poll) (*Decisions, error) {
	if ps := c.needRestore(b); len(ps) > 0 {
		return &Decisions{Restore: ps}, nil
	}
	// Most inputs and completions log one event and owe one answer or
	// start one call: room for that up front spares the regrowth.
	n := len(b.Inputs) + len(c.unrecorded)
	c.occ.takeRefused() // a Step that failed may have left some
	t := &stepper{c: c, now: now, nowMs: now.UnixMilli(), poll: b, done: map[string]bool{},
		rd: &Decisions{Overlay: overlay.New(c.view, overlay.Strict()), Verdicts: map[string]int{},
			Events: make([]Event, 0, n), Answers: make([]Answer, 0, n), Calls: make([]Call, 0, len(b.Inputs))}}
	for _, cm := range c.unrecorded {
		t.origin = CallOrigin(cm.Call.RK, cm.Call.CallID)
		if err := t.complete(cm); err != nil {
			return nil, err
		}
	}
	t.origin = Origin{}
	if err := t.orphans(); err != nil {
		return nil, err
	}
	for i := range b.Inputs {
		t.origin = b.Inputs[i].Origin
		if err := t.input(i); err != nil {
			return nil, err
		}
	}
	t.origin = Origin{}
	t.rd.Refused = c.occ.takeRefused()
	if err := t.sweep(); err != nil {
		return nil, err
	}
	if err := t.snapshotStep(); err != nil {
		return nil, err
	}
	return t.rd, nil
}

// needRestore lists the partitions the poll reads that are not
// restored: the owner of every decodable input that arrived on it (a
// forward reads nothing), and the partition of every finished call of
// the current assignment.
func (c *Core) needRestore(b *Poll) []int32 {
	seen := map[int32]bool{}
	var out []int32
	need := func(p int32) {
		if pt, ok := c.parts[p]; (!ok || !pt.restored) && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	for _, cm := range c.unrecorded {
		if pt, ok := c.parts[cm.Call.P]; ok && pt.epoch == cm.Call.Epoch {
			need(cm.Call.P)
		}
	}
	for i := range b.Inputs {
		in := &b.Inputs[i]
		if in.Reject == nil && in.Intent.Owner == in.Intent.Partition && c.poison.isolated(in.Origin) == 0 {
			need(in.Intent.Owner)
		}
	}
	return out
}

func (s *stepper) fatal(err error) error { return fmt.Errorf("%w: %w", ErrView, err) }

// load returns the key's entry in the tick's overlay.
func (s *stepper) load(p int32, tenant, key string) (*overlay.Entry, error) {
	en, err := s.rd.Overlay.Load(p, tenant, key)
	if err != nil {
		return nil, s.fatal(err)
	}
	return en, nil
}

// input decides one polled record. Bad input is answered and
// dead-lettered and never stops the partition.
func (s *stepper) input(i int) error {
	s.rd.Inputs++
	in := &s.poll.Inputs[i]
	if s.c.poison.isolated(in.Origin) > 0 {
		s.isolate(i)
		return nil
	}
	if in.Reject != nil {
		s.reject(i, in.Reject)
		return nil
	}
	si := in.Intent
	var en *overlay.Entry // a forward never reads or writes the view
	var rec *saga.Record
	if si.Owner == si.Partition {
		var err error
		if en, err = s.load(si.Owner, si.Tenant, si.Key); err != nil {
			return err
		}
		rec = en.Cur
	}
	rk := wire.RoutingKey(si.Tenant, si.Key)
	d := saga.Decide(rec, si, s.c.env(s.nowMs, rk, s.done))
	return s.act(i, en, si, d)
}

// act carries out a decision on a polled record.
func (s *stepper) act(i int, en *overlay.Entry, si saga.Input, d saga.Decision) error {
	switch d.Verdict {
	case saga.VerdictForward:
		s.rd.Forwards = append(s.rd.Forwards, Forward{In: i, Owner: si.Owner, Origin: s.origin})
		s.rd.Verdicts[d.Verdict.String()]++
		return nil
	case saga.VerdictReject:
		s.deadLetter(i, d.Reason, d.Detail, si.IntentID, si.Tenant, si.Key)
	case saga.VerdictStale: // a member's fact its key has moved past (saga/fact.go)
		s.c.cfg.Logger.Info("a fact its key has moved past", "key", wire.RoutingKey(si.Tenant, si.Key), "id", si.IntentID, "detail", d.Detail)
	}
	s.emit(si.Owner, en, d, si.Traceparent)
	if d.Call != nil {
		s.startCall(si.Owner, *d.Call)
	}
	return nil
}

// emit appends d's events to the log and folds them into the overlay
// (en: the key's entry; read events have none), and queues its answers.
func (s *stepper) emit(p int32, en *overlay.Entry, d saga.Decision, traceparent string) {
	for _, ev := range d.Events {
		s.rd.Events = append(s.rd.Events, Event{P: p, Ev: ev, Traceparent: traceparent, Origin: s.origin})
		if ev.Kind.IsRead() {
			s.rd.Overlay.NoteRead(p, &ev)
			continue
		}
		s.rd.Overlay.Apply(en, ev)
	}
	for _, a := range d.Answers {
		s.answer(Answer{Answer: a})
	}
	s.rd.Verdicts[d.Verdict.String()]++
}

// answer queues a, to its reply_to unless the origin it answers had to be
// isolated: then to the results topic, with the reason.
func (s *stepper) answer(a Answer) {
	a.Origin = s.origin
	if a.To.ReplyTo != "" && s.c.poison.isolated(s.origin) > 0 {
		a.ReplyToError = "an earlier answer to " + a.To.ReplyTo + " could not be produced; answered on the results topic"
	}
	s.rd.Answers = append(s.rd.Answers, a)
}

func (s *stepper) startCall(p int32, sc saga.Call) {
	rk := wire.RoutingKey(sc.Tenant, sc.Key)
	c := Call{Call: sc, P: p, Epoch: s.c.parts[p].epoch, RK: rk}
	s.c.calls.start(c, s.done[rk])
	s.c.occ.hold(c, s.nowMs)
	s.rd.Calls = append(s.rd.Calls, c)
}

// reject answers an input that could not be decided, where it can be
// answered, and dead-letters it with the reason.
func (s *stepper) reject(i int, rej *wire.Reject) {
	s.deadLetter(i, rej.Reason, rej.Detail, rej.ID, rej.Tenant, rej.Key)
	s.rd.Verdicts[saga.VerdictReject.String()]++
	if !rej.Answerable() {
		return
	}
	in := &s.poll.Inputs[i]
	a := Answer{Answer: saga.Answer{To: saga.Waiter{IntentID: rej.ID, ReplyTo: rej.ReplyTo, Traceparent: in.Traceparent, Type: rej.Type},
		Tenant: rej.Tenant, Key: rej.Key, Tool: rej.Tool, Status: codes.StatusRejected, Err: &saga.Error{Code: rej.Reason, Message: rej.Detail}}}
	if !wire.ValidTenant(rej.Tenant) || rej.Key == "" {
		a.RecordKey, a.RawKey = in.RecordKey, true
	}
	s.answer(a)
}

// isolate answers an input whose records could not be produced before,
// on its own: rejected `unproducible` on the results topic and
// dead-lettered with a prefix of its value (after a second failure, bare:
// deadLetter). Its offset commits with the rest of the tick.
func (s *stepper) isolate(i int) {
	rej := s.poll.Inputs[i].Salvage
	rej.Reason = codes.ReasonUnproducible
	rej.Detail = "a record produced for this input was refused by the broker (too large, or its topic is gone); the input was not decided"
	s.reject(i, &rej)
}

// deadLetter keeps the input with the reason: nothing is dropped silently.
func (s *stepper) deadLetter(i int, reason, detail, id, tenant, key string) {
	s.rd.DeadLetters = append(s.rd.DeadLetters, DeadLetter{In: i, Reason: reason, Detail: detail, ID: id, Tenant: tenant, Key: key,
		At: s.nowMs, Bare: s.c.poison.isolated(s.origin) > 1, Origin: s.origin})
}

// complete records a finished call, unless its partition moved since it
// was dispatched: then the outcome is dropped (Decisions.Lost), never written
// by a non-owner; the loop keeps a definite one as a fact for the key's
// owner (executor/facts.go), and a read is called again by its new owner.
// Either way the call's place is free from now (admission.go).
func (s *stepper) complete(cm Completion) error {
	s.c.occ.free(cm.Call, s.nowMs)
	if pt, ok := s.c.parts[cm.Call.P]; !ok || pt.epoch != cm.Call.Epoch {
		s.rd.Lost = append(s.rd.Lost, cm)
		s.c.cfg.Logger.Info("outcome not recorded here: the partition moved", "key", cm.Call.RK, "status", cm.Outcome.Status.String())
		return nil
	}
	if s.c.poison.isolated(s.origin) > 0 {
		cm = withoutResult(cm)
	}
	if cm.Call.Kind == saga.CallReadOnly {
		return s.completeRead(cm)
	}
	s.rd.Recorded = append(s.rd.Recorded, cm)
	s.done[cm.Call.RK] = true
	en, err := s.load(cm.Call.P, cm.Call.Tenant, cm.Call.Key)
	if err != nil {
		return err
	}
	d := saga.Complete(en.Cur, cm.Outcome, s.c.env(s.nowMs, cm.Call.RK, s.done))
	s.emit(cm.Call.P, en, d, cm.Call.Traceparent)
	return nil
}

// withoutResult is a completion whose records could not be produced,
// recorded again without its result: the outcome itself must not be lost.
func withoutResult(cm Completion) Completion {
	if cm.HadResult {
		cm.Outcome.Result = nil
		cm.Outcome.Err = &saga.Error{Code: codes.ErrResultNotStored, Message: "the answer carrying the tool's result could not be produced; the call's outcome stands"}
	}
	return cm
}

// completeRead records a read's outcome and answers it, unless the log
// already holds its answer.
//
// Why: after a transaction end whose outcome is unknown, the next tick
// records the same completions again. A key's record tells such a replay
// apart (saga.Complete finds it settled), but a read keeps no record, so
// it would be answered a second time whenever the unknown end had in
// fact committed (a broker bounce makes such ends common). The pending-read entry, restored from the log first, is
// that record: present means not answered yet.
func (s *stepper) completeRead(cm Completion) error {
	p := cm.Call.P
	pending, err := s.readPending(overlay.ReadID{P: p, Tenant: cm.Call.Tenant, Key: cm.Call.Key, IntentID: cm.Call.CallID})
	if err != nil {
		return err
	}
	if !pending {
		s.c.calls.forget(cm.Call)
		s.c.cfg.Logger.Info("read outcome dropped: the log already holds its answer", "key", cm.Call.RK, "intent", cm.Call.CallID)
		return nil
	}
	s.rd.Recorded = append(s.rd.Recorded, cm)
	d := saga.CompleteRead(cm.Call.Call, cm.Outcome, s.c.env(s.nowMs, cm.Call.RK, s.done))
	s.emit(p, nil, d, cm.Call.Traceparent)
	return nil
}

// readPending reports whether a read is taken on and not answered, as of
// this tick.
func (s *stepper) readPending(id overlay.ReadID) (bool, error) {
	if ev, known := s.rd.Overlay.Read(id); known {
		return ev != nil, nil
	}
	pending, err := s.c.view.ReadPending(id)
	if err != nil {
		return false, s.fatal(err)
	}
	return pending, nil
}

// sweep expires settled keys past their retention, at most SweepLimit
// per sweep, for the restored partitions this member owns.
func (s *stepper) sweep() error {
	if s.now.Sub(s.c.lastSweep) < s.c.cfg.SweepInterval {
		return nil
	}
	s.c.lastSweep = s.now
	keys, err := s.c.view.Expired(s.nowMs, SweepLimit)
	if err != nil {
		return s.fatal(err)
	}
	for _, k := range keys {
		p := s.c.partitionOf(k[0], k[1])
		if pt, ok := s.c.parts[p]; !ok || !pt.restored {
			continue
		}
		en, err := s.load(p, k[0], k[1])
		if err != nil {
			return err
		}
		d := saga.Expire(en.Cur, s.c.env(s.nowMs, wire.RoutingKey(k[0], k[1]), s.done))
		if d.Verdict == saga.VerdictStale {
			continue
		}
		s.emit(p, en, d, "")
	}
	return nil
}
