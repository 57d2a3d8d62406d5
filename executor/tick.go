package executor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
)

// tick is one loop tick's work: a view overlay of the keys it touched, the
// records to produce in its transaction, and what to do once it commits.
type tick struct {
	e        *Executor
	ctx      context.Context
	now      int64
	overlay  map[string]*entry
	out      []*kgo.Record
	started  []job        // calls to dispatch after the commit
	recorded []completion // completions this tick records
	done     map[string]bool
	touched  map[int32]bool                       // events partitions this tick writes
	reads    map[string]*saga.Event               // pending reads to store (nil: answered), by aux key
	txn      txnKey                               // the producer id and epoch of its transaction
	tried    map[string]map[int32]kgo.EpochOffset // the offsets its End tried to commit
	inputs   int
	verdicts map[string]int
	rounded  bool // it took a step of the snapshot round (snapshot.go)

	// origin is what the tick is producing records for right now;
	// origins tags every queued record with it (poison.go).
	origin  origin
	origins map[*kgo.Record]origin

	mu         sync.Mutex
	lastOffset map[int32]int64 // events partition -> offset of the last event produced
	produceErr error
	failedRecs []failedRecord // records that could not be produced, with their origins
}

// entry is one key's record before and during the tick.
type entry struct {
	p         int32
	prev, cur *saga.Record
}

func (e *Executor) newTick(ctx context.Context) *tick {
	return &tick{e: e, ctx: ctx, now: e.now(), overlay: map[string]*entry{}, done: map[string]bool{},
		verdicts: map[string]int{}, lastOffset: map[int32]int64{}, touched: map[int32]bool{}, reads: map[string]*saga.Event{},
		origins: map[*kgo.Record]origin{}}
}

// tick decides everything polled plus every finished call, commits it in
// one transaction, syncs Pebble once, and dispatches the new calls.
func (e *Executor) tick(ctx context.Context, fs kgo.Fetches) error {
	start := time.Now()
	e.fetchErrors(fs)
	e.collectCompletions()
	t := e.newTick(ctx)
	if err := t.build(fs); err != nil {
		e.forgetStarted(t)
		e.abandonRound(t)
		return err
	}
	if len(t.out) == 0 && fs.NumRecords() == 0 {
		t.finishWithoutCommit()
		return nil
	}
	committed, err := e.commit(t)
	if errors.Is(err, ErrFatal) {
		return err
	}
	if err != nil || !committed {
		return e.afterAbort(t, err)
	}
	if err := e.afterCommit(t); err != nil {
		return err
	}
	e.m.TickDuration.Observe(time.Since(start).Seconds())
	return nil
}

// collectCompletions moves every finished call from the dispatcher into
// the unrecorded list without blocking.
func (e *Executor) collectCompletions() {
	for {
		select {
		case c := <-e.disp.out:
			e.unrecorded = append(e.unrecorded, c)
		default:
			return
		}
	}
}

func (t *tick) build(fs kgo.Fetches) error {
	for _, c := range t.e.unrecorded {
		t.origin = callOrigin(c.job.rk + "\x00" + c.job.call.CallID) // read ids are unique per key only
		if err := t.complete(c); err != nil {
			return err
		}
	}
	var err error
	fs.EachRecord(func(r *kgo.Record) {
		if err == nil {
			t.origin = inputOrigin(r)
			err = t.input(r)
		}
	})
	if err != nil {
		return err
	}
	t.origin = origin{}
	t.e.restoreIdle(t.ctx)
	t.e.restoreGapped(t.ctx)
	t.e.watchStalls(t.ctx)
	if err := t.sweep(); err != nil {
		return err
	}
	return t.snapshotStep()
}

// load returns the key's entry, restoring its partition first if needed.
func (t *tick) load(p int32, tenant, key string) (*entry, error) {
	rk := tenant + "/" + key
	if en, ok := t.overlay[rk]; ok {
		return en, nil
	}
	if err := t.e.ensureRestored(t.ctx, p); err != nil {
		return nil, err
	}
	rec, err := t.e.store.Get(tenant, key)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFatal, err)
	}
	en := &entry{p: p, prev: rec, cur: rec.Clone()}
	t.overlay[rk] = en
	return en, nil
}

// emit appends d's events to the log and the overlay, and queues its
// answers. The events are encoded (and checked) before anything changes.
func (t *tick) emit(en *entry, d saga.Decision, traceparent string) error {
	for i := range d.Events {
		ev := &d.Events[i]
		b, err := eventlog.Encode(ev)
		if err != nil {
			return fmt.Errorf("%w: saga produced an invalid event: %w", ErrFatal, err)
		}
		r := eventlog.EncodeRecord(t.e.cfg.Names, en.p, b, ev.Tenant, ev.Key, traceparent)
		t.produce(r)
		t.touched[en.p] = true
		if ev.Kind.IsRead() {
			t.pendingRead(en.p, ev)
			continue
		}
		en.cur = saga.Apply(en.cur, *ev)
	}
	for _, a := range d.Answers {
		t.answer(a)
	}
	t.verdicts[d.Verdict.String()]++
	return nil
}

func (t *tick) env(rk string) saga.Env {
	_, inflight := t.e.inflight[rk]
	return saga.Env{Now: t.now, InFlight: inflight && !t.done[rk], MaxWaiters: t.e.cfg.MaxWaiters, Policy: t.e.policy}
}

// finishWithoutCommit keeps only the completions that still need a
// transaction: stale ones were dropped while building the tick.
func (t *tick) finishWithoutCommit() {
	t.e.unrecorded = append([]completion(nil), t.recorded...)
}

// commit produces the tick's records in one transaction and ends it with
// the polled offsets, fenced by the group generation.
func (e *Executor) commit(t *tick) (bool, error) {
	if err := e.begin(); err != nil {
		return false, err
	}
	for _, r := range t.out {
		e.sess.Produce(t.ctx, r, t.promise)
	}
	e.commitHooks(t)
	start := time.Now()
	committed, err := e.end(t)
	e.m.TxnDuration.Observe(time.Since(start).Seconds())
	if err == nil && !committed {
		// Seen to abort, and redone: a remnant must stay hidden. After an
		// error the outcome is unknown; afterAbort decides by what the
		// member does next.
		e.recordAborted(t.txn)
	}
	if err != nil {
		return false, e.recoverTxn(err)
	}
	return committed, nil
}

// end ends the transaction. Its context is cancelled when the group wants
// to run a callback that our poll is blocking: a member that lost its
// session waits in End for a heartbeat that only that callback can
// unblock, so without the cancel End would hang until its timeout.
func (e *Executor) end(t *tick) (bool, error) {
	endCtx, cancel := context.WithTimeout(context.WithoutCancel(t.ctx), e.cfg.TransactionTimeout)
	defer cancel()
	e.endMu.Lock()
	e.endCancel = cancel
	e.endMu.Unlock()
	defer func() { e.endMu.Lock(); e.endCancel = nil; e.endMu.Unlock() }()
	endCtx = kgo.PreTxnCommitFnContext(endCtx, e.fence(t))
	try := kgo.TryCommit
	if err := e.flush(t.ctx); err != nil || t.failed() {
		try = kgo.TryAbort
	}
	// The producer id and epoch the tick's records carry (loaded by now),
	// so that a hanging remnant of this transaction can be closed the way
	// this member saw it end (hanging.go).
	if pid, epoch, err := e.sess.Client().ProducerID(endCtx); err == nil {
		t.txn = txnKey{pid, epoch}
	}
	t.tried = e.sess.Client().UncommittedOffsets()
	return e.sess.End(endCtx, try)
}

// flush waits until every record of the tick is acknowledged, bounded by
// the transaction timeout but not by the group: only End can be stuck on
// a heartbeat, and a flush cut short would leave records buffered.
func (e *Executor) flush(ctx context.Context) error {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.TransactionTimeout)
	defer cancel()
	return e.sess.Client().Flush(fctx)
}

// recoverTxn handles a failed End: the outcome of the transaction is
// unknown to us, so the client is told to abort (the documented retry,
// which bumps the producer epoch and fences whatever may still be open).
// While the broker cannot be reached the abort is retried (see
// abortThroughOutage); if it still fails the client is unusable and the
// process must restart.
//
// Records still buffered are dropped first. Why: when End's context is
// cancelled (a blocked group callback) before the flush completes, End
// returns without aborting them, and they would otherwise leave with the
// next transaction: a started event of an aborted tick committed behind
// the view's back, with no call ever dispatched for it.
func (e *Executor) recoverTxn(cause error) error {
	if err := e.abortThroughOutage(); err != nil {
		return fmt.Errorf("%w: transaction end failed (%w) and the abort too: %w", ErrFatal, cause, err)
	}
	return cause
}

// onCallbackBlocked runs when the group wants to revoke, assign or mark
// partitions lost while our poll blocks it: drain at the end of the tick,
// and stop waiting in a transaction end that cannot finish first.
func (e *Executor) onCallbackBlocked(context.Context, *kgo.Client) {
	e.rebalancePending.Store(true)
	e.wake()
	e.endMu.Lock()
	defer e.endMu.Unlock()
	if e.endCancel != nil {
		e.endCancel()
	}
}

func (e *Executor) commitHooks(t *tick) {
	for _, j := range t.started {
		e.cfg.Hooks.at(PointBeforeStartedCommit, j.rk)
	}
	for _, c := range t.recorded {
		e.cfg.Hooks.at(PointDuringOutcomeCommit, c.job.rk)
	}
}

func (t *tick) promise(r *kgo.Record, err error) {
	if err != nil {
		t.fail(r, t.origins[r], err) // origins is complete before the first produce
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if r.Topic == t.e.cfg.Names.Events && r.Offset >= t.lastOffset[r.Partition] {
		t.lastOffset[r.Partition] = r.Offset
	}
}

func (t *tick) failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.produceErr != nil
}

// afterCommit materialises the tick in one synced Pebble batch, then
// dispatches the calls whose started events are now committed.
func (e *Executor) afterCommit(t *tick) error {
	e.m.Txns.WithLabelValues("committed").Inc()
	e.offsetsUnsure = false // the session's idea of committed is ours again
	e.m.TickRecords.Observe(float64(t.inputs + len(t.recorded)))
	for v, n := range t.verdicts {
		e.m.Intents.WithLabelValues(v).Add(float64(n))
	}
	e.unrecorded = nil
	for _, c := range t.recorded {
		e.forgetCall(c.job)
	}
	if err := e.materialise(t); err != nil {
		e.cfg.Logger.Error("pebble write failed; the view will catch up from the log", "err", err)
		e.needCatchUp(t)
	}
	for _, j := range t.started {
		e.cfg.Hooks.at(PointAfterStartedCommit, j.rk)
	}
	e.disp.submit(t.started...)
	e.m.InFlight.Set(float64(len(e.inflight)))
	return nil
}

func (e *Executor) materialise(t *tick) error {
	b := e.store.NewBatch()
	for _, en := range t.overlay {
		if err := b.Put(en.p, en.prev, en.cur); err != nil {
			b.Discard()
			return err
		}
	}
	for k, ev := range t.reads {
		var err error
		if ev == nil {
			err = b.DeleteAux([]byte(k))
		} else if v, eerr := eventlog.Encode(ev); eerr != nil {
			err = eerr
		} else {
			err = b.PutAux([]byte(k), v)
		}
		if err != nil {
			b.Discard()
			return err
		}
	}
	for p, off := range t.lastOffset {
		if err := b.SetCheckpoint(e.cfg.Names.Events, p, off+1); err != nil {
			b.Discard()
			return err
		}
	}
	e.m.Fsyncs.Inc()
	if err := b.Commit(state.Sync); err != nil {
		return err
	}
	e.countDoubt(t)
	return nil
}

// countDoubt moves the per-partition count of unsettled keys by what the
// tick changed, and republishes the gauge of the partitions it touched.
func (e *Executor) countDoubt(t *tick) {
	touched := map[int32]bool{}
	for _, en := range t.overlay {
		was := en.prev != nil && en.prev.Status.InDoubt()
		is := en.cur != nil && en.cur.Status.InDoubt()
		switch {
		case is && !was:
			e.unsettled[en.p]++
		case was && !is:
			e.unsettled[en.p]--
		}
		touched[en.p] = true
	}
	for p := range touched {
		if _, ok := e.owned[p]; ok {
			e.publishDoubt(p)
		}
	}
}

// afterAbort forgets the tick: its calls are not dispatched, its
// completions stay unrecorded for the next tick, and the polled records
// are fetched again (the session rewound them). An error from End leaves
// the commit unknown, so the view catches up from the log before it is
// used again.
func (e *Executor) afterAbort(t *tick, err error) error {
	e.m.Txns.WithLabelValues("aborted").Inc()
	e.notePoison(t)
	e.forgetStarted(t)
	e.abandonRound(t)
	t.finishWithoutCommit()
	if err != nil {
		e.cfg.Logger.Warn("transaction failed; partitions catch up from the log", "err", err, "produce_err", t.produceErr)
		e.needCatchUp(t)
		e.offsetsUnsure = true
	}
	set, err2 := e.resyncOffsets()
	if err2 != nil {
		return err2
	}
	if err != nil && set != nil && !actedCommitted(t.tried, set, e.owns) {
		// The group's offsets did not move: this member polls the
		// tick's records again and redoes them.
		e.recordAborted(t.txn)
	}
	return nil
}

func (e *Executor) owns(p int32) bool { _, ok := e.owned[p]; return ok }

// recordAborted keeps k among the transactions this member treated as
// aborted. A failed write is logged, not fatal: the remnant it protects
// is rare, and losing the record costs at most a repeated answer.
func (e *Executor) recordAborted(k txnKey) {
	if err := e.aborted.add(k, time.Now()); err != nil {
		e.cfg.Logger.Error("recording an aborted transaction failed", "producer_id", k.pid, "producer_epoch", k.epoch, "err", err)
	}
}

func (e *Executor) needCatchUp(t *tick) {
	stale := maps.Clone(t.touched) // reads write events without an overlay entry
	for _, en := range t.overlay {
		stale[en.p] = true
	}
	for p := range stale {
		if o, ok := e.owned[p]; ok {
			// The reads too: a lost answer to a commit that did go
			// through leaves read_started events in the log whose calls
			// this member has just forgotten (forgetStarted), and whose
			// intents' offsets are committed, so no redelivery brings
			// them back.
			o.restored, o.readsResumed = false, false
		}
	}
}

func partitionLabel(p int32) string { return strconv.Itoa(int(p)) }
