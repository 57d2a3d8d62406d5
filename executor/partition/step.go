package partition

import (
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/view"
)

// ErrView wraps a read of the view that failed: the member must stop (its
// view is a local store; nothing decided on a partial read can stand).
var ErrView = fmt.Errorf("partition: view read failed")

// tick is the work of one Step.
type tick struct {
	c      *Core
	now    time.Time
	nowMs  int64
	batch  *Batch
	rd     *Ready
	done   map[string]bool // routing keys whose call this tick records
	origin Origin          // what the tick is producing records for right now
}

// Step decides one tick: every finished call (Finished), then every
// polled record in order, then the sweep of expired keys and a step of
// the snapshot round. If a partition the batch needs is not restored, the
// Ready only names it (Restore) and nothing changes. The error is a
// failed read of the view (ErrView): fatal.
//
// Until the Ready is acknowledged (Committed, Aborted or Skipped) the
// core must not be stepped again.
func (c *Core) Step(now time.Time, b *Batch) (*Ready, error) {
	if ps := c.needRestore(b); len(ps) > 0 {
		return &Ready{Restore: ps}, nil
	}
	// Most inputs and completions log one event and owe one answer or
	// start one call: room for that up front spares the regrowth.
	n := len(b.Inputs) + len(c.unrecorded)
	t := &tick{c: c, now: now, nowMs: now.UnixMilli(), batch: b, done: map[string]bool{},
		rd: &Ready{Overlay: view.New(c.view, view.Strict()), Verdicts: map[string]int{},
			Events: make([]Event, 0, n), Answers: make([]Answer, 0, n), Calls: make([]Call, 0, len(b.Inputs))}}
	for _, cm := range c.unrecorded {
		t.origin = CallOrigin(cm.Call.RK, cm.Call.CallID)
		if err := t.complete(cm); err != nil {
			return nil, err
		}
	}
	for i := range b.Inputs {
		t.origin = b.Inputs[i].Origin
		if err := t.input(i); err != nil {
			return nil, err
		}
	}
	t.origin = Origin{}
	if err := t.sweep(); err != nil {
		return nil, err
	}
	if err := t.snapshotStep(); err != nil {
		return nil, err
	}
	return t.rd, nil
}

// needRestore lists the partitions the batch reads that are not
// restored: the owner of every decodable input that arrived on it (a
// forward reads nothing), and the partition of every finished call of
// the current assignment.
func (c *Core) needRestore(b *Batch) []int32 {
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

func (t *tick) fatal(err error) error { return fmt.Errorf("%w: %w", ErrView, err) }

// load returns the key's entry in the tick's overlay.
func (t *tick) load(p int32, tenant, key string) (*view.Entry, error) {
	en, err := t.rd.Overlay.Load(p, tenant, key)
	if err != nil {
		return nil, t.fatal(err)
	}
	return en, nil
}

// input decides one polled record. Bad input is answered and
// dead-lettered and never stops the partition.
func (t *tick) input(i int) error {
	t.rd.Inputs++
	in := &t.batch.Inputs[i]
	if t.c.poison.isolated(in.Origin) > 0 {
		t.isolate(i)
		return nil
	}
	if in.Reject != nil {
		t.reject(i, in.Reject)
		return nil
	}
	si := in.Intent
	var en *view.Entry // a forward never reads or writes the view
	var rec *saga.Record
	if si.Owner == si.Partition {
		var err error
		if en, err = t.load(si.Owner, si.Tenant, si.Key); err != nil {
			return err
		}
		rec = en.Cur
	}
	rk := topics.RoutingKey(si.Tenant, si.Key)
	d := saga.Decide(rec, si, t.c.env(t.nowMs, rk, t.done))
	return t.act(i, en, si, d)
}

// act carries out a decision on a polled record.
func (t *tick) act(i int, en *view.Entry, si saga.Input, d saga.Decision) error {
	switch d.Verdict {
	case saga.VerdictForward:
		t.rd.Forwards = append(t.rd.Forwards, Forward{In: i, Owner: si.Owner, Origin: t.origin})
		t.rd.Verdicts[d.Verdict.String()]++
		return nil
	case saga.VerdictReject:
		t.deadLetter(i, d.Reason, d.Detail, si.IntentID, si.Tenant, si.Key)
	}
	t.emit(si.Owner, en, d, si.Traceparent)
	if d.Call != nil {
		t.startCall(si.Owner, *d.Call)
	}
	return nil
}

// emit appends d's events to the log and folds them into the overlay
// (en: the key's entry; read events have none), and queues its answers.
func (t *tick) emit(p int32, en *view.Entry, d saga.Decision, traceparent string) {
	for _, ev := range d.Events {
		t.rd.Events = append(t.rd.Events, Event{P: p, Ev: ev, Traceparent: traceparent, Origin: t.origin})
		if ev.Kind.IsRead() {
			t.rd.Overlay.NoteRead(p, &ev)
			continue
		}
		t.rd.Overlay.Apply(en, ev)
	}
	for _, a := range d.Answers {
		t.answer(Answer{Answer: a})
	}
	t.rd.Verdicts[d.Verdict.String()]++
}

// answer queues a, to its reply_to unless the origin it answers had to be
// isolated: then to the results topic, with the reason.
func (t *tick) answer(a Answer) {
	a.Origin = t.origin
	if a.To.ReplyTo != "" && t.c.poison.isolated(t.origin) > 0 {
		a.ReplyToError = "an earlier answer to " + a.To.ReplyTo + " could not be produced; answered on the results topic"
	}
	t.rd.Answers = append(t.rd.Answers, a)
}

func (t *tick) startCall(p int32, sc saga.Call) {
	rk := topics.RoutingKey(sc.Tenant, sc.Key)
	c := Call{Call: sc, P: p, Epoch: t.c.parts[p].epoch, RK: rk}
	t.c.calls.start(c, t.done[rk])
	t.rd.Calls = append(t.rd.Calls, c)
}

// reject answers an input that could not be decided, where it can be
// answered, and dead-letters it with the reason.
func (t *tick) reject(i int, rej *topics.Reject) {
	t.deadLetter(i, rej.Reason, rej.Detail, rej.ID, rej.Tenant, rej.Key)
	t.rd.Verdicts[saga.VerdictReject.String()]++
	if !rej.Answerable() {
		return
	}
	in := &t.batch.Inputs[i]
	a := Answer{Answer: saga.Answer{To: saga.Waiter{IntentID: rej.ID, ReplyTo: rej.ReplyTo, Traceparent: in.Traceparent, Type: rej.Type},
		Tenant: rej.Tenant, Key: rej.Key, Tool: rej.Tool, Status: codes.StatusRejected, Err: &saga.Error{Code: rej.Reason, Message: rej.Detail}}}
	if !topics.ValidTenant(rej.Tenant) || rej.Key == "" {
		a.RecordKey, a.RawKey = in.RecordKey, true
	}
	t.answer(a)
}

// isolate answers an input whose records could not be produced before,
// on its own: rejected `unproducible` on the results topic and
// dead-lettered with a prefix of its value (after a second failure, bare:
// deadLetter). Its offset commits with the rest of the tick.
func (t *tick) isolate(i int) {
	rej := t.batch.Inputs[i].Salvage
	rej.Reason = codes.ReasonUnproducible
	rej.Detail = "a record produced for this input was refused by the broker (too large, or its topic is gone); the input was not decided"
	t.reject(i, &rej)
}

// deadLetter keeps the input with the reason: nothing is dropped silently.
func (t *tick) deadLetter(i int, reason, detail, id, tenant, key string) {
	t.rd.DeadLetters = append(t.rd.DeadLetters, DeadLetter{In: i, Reason: reason, Detail: detail, ID: id, Tenant: tenant, Key: key,
		At: t.nowMs, Bare: t.c.poison.isolated(t.origin) > 1, Origin: t.origin})
}

// complete records a finished call, unless its partition moved since it
// was dispatched: then its key is in doubt for the new owner (a read is
// called again by it) and the outcome is dropped (Ready.Lost), never
// written by a non-owner.
func (t *tick) complete(cm Completion) error {
	if pt, ok := t.c.parts[cm.Call.P]; !ok || pt.epoch != cm.Call.Epoch {
		t.rd.Lost = append(t.rd.Lost, cm)
		t.c.cfg.Logger.Warn("outcome not recorded: partition moved; the key is in doubt for its owner", "key", cm.Call.RK, "status", cm.Outcome.Status.String())
		return nil
	}
	if t.c.poison.isolated(t.origin) > 0 {
		cm = withoutResult(cm)
	}
	if cm.Call.Kind == saga.CallReadOnly {
		return t.completeRead(cm)
	}
	t.rd.Recorded = append(t.rd.Recorded, cm)
	t.done[cm.Call.RK] = true
	en, err := t.load(cm.Call.P, cm.Call.Tenant, cm.Call.Key)
	if err != nil {
		return err
	}
	d := saga.Complete(en.Cur, cm.Outcome, t.c.env(t.nowMs, cm.Call.RK, t.done))
	t.emit(cm.Call.P, en, d, cm.Call.Traceparent)
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
// it was answered a second time whenever the unknown end had in fact
// committed (found by the chaos harness: 54 reads answered twice after a
// broker bounce). The pending-read entry, restored from the log first, is
// that record: present means not answered yet.
func (t *tick) completeRead(cm Completion) error {
	p := cm.Call.P
	pending, err := t.readPending(view.ReadID{P: p, Tenant: cm.Call.Tenant, Key: cm.Call.Key, IntentID: cm.Call.CallID})
	if err != nil {
		return err
	}
	if !pending {
		t.c.calls.forget(cm.Call)
		t.c.cfg.Logger.Info("read outcome dropped: the log already holds its answer", "key", cm.Call.RK, "intent", cm.Call.CallID)
		return nil
	}
	t.rd.Recorded = append(t.rd.Recorded, cm)
	d := saga.CompleteRead(cm.Call.Call, cm.Outcome, t.c.env(t.nowMs, cm.Call.RK, t.done))
	t.emit(p, nil, d, cm.Call.Traceparent)
	return nil
}

// readPending reports whether a read is taken on and not answered, as of
// this tick.
func (t *tick) readPending(id view.ReadID) (bool, error) {
	if ev, known := t.rd.Overlay.Read(id); known {
		return ev != nil, nil
	}
	pending, err := t.c.view.ReadPending(id)
	if err != nil {
		return false, t.fatal(err)
	}
	return pending, nil
}

// sweep expires settled keys past their retention, at most SweepLimit
// per sweep, for the restored partitions this member owns.
func (t *tick) sweep() error {
	if t.now.Sub(t.c.lastSweep) < t.c.cfg.SweepInterval {
		return nil
	}
	t.c.lastSweep = t.now
	keys, err := t.c.view.Expired(t.nowMs, SweepLimit)
	if err != nil {
		return t.fatal(err)
	}
	for _, k := range keys {
		p := t.c.partitionOf(k[0], k[1])
		if pt, ok := t.c.parts[p]; !ok || !pt.restored {
			continue
		}
		en, err := t.load(p, k[0], k[1])
		if err != nil {
			return err
		}
		d := saga.Expire(en.Cur, t.c.env(t.nowMs, topics.RoutingKey(k[0], k[1]), t.done))
		if d.Verdict == saga.VerdictStale {
			continue
		}
		t.emit(p, en, d, "")
	}
	return nil
}
