package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/executor/txn"
	"github.com/atmostonce/toolexec/state"
)

// tick is the loop's one step after a poll: prepare, step, encode,
// commit, confirm, dispatch, materialise.
//
//   - prepare (prepare.go, restore.go): finished calls to the core,
//     polled records decoded, reply_to topics looked up, background
//     restores (bounded);
//   - step (partition.Core.Step): the decisions, as a Decisions value; one that
//     names partitions to restore first is answered by restoring them
//     (bounded; a failure defers the tick) and stepping again;
//   - encode (encode.go): the Decisions as records, each tagged with its
//     origin and checked against the broker's size limit;
//   - commit and confirm (the transaction session, package txn): one
//     transaction with the polled offsets and the fence; for a tick with
//     calls, the commit markers seen on the events partitions of their
//     started events (an abort behind the reported commit, or no marker
//     in time, ends the tick as one whose outcome is unknown: nothing is
//     materialised or dispatched);
//   - dispatch (afterCommit): the calls whose started events just
//     committed;
//   - materialise (afterCommit): the Decisions' overlay and the new
//     checkpoints in one synced Pebble batch, while the calls run.
func (e *Executor) tick(ctx context.Context, fs kgo.Fetches) error {
	start := time.Now()
	tt := e.trace.tick(start)
	e.fetchErrors(fs)
	e.collectCompletions()
	pr := e.prepare(fs)
	e.restoreBackground(ctx)
	e.txns.CheckHanging(ctx)
	rd, err := e.step(ctx, pr)
	if err != nil {
		return err
	}
	if err := e.releasedOutcomes(rd.Lost); err != nil {
		return err
	}
	tt.decided(pr, rd)
	tr, err := e.enc.encode(rd, pr.records)
	if err != nil {
		return err
	}
	if len(tr.Records) == 0 && len(pr.records) == 0 {
		e.core.Skipped(rd)
		return nil
	}
	tr.Confirm = callPartitions(rd.Calls)
	out, err := e.txns.Commit(ctx, &tr.Transaction, func() { e.commitHooks(rd) })
	if err != nil {
		return err
	}
	if out != txn.Committed {
		e.afterAbort(rd, tr, out)
		if out == txn.Aborted {
			return nil
		}
		return e.keepUnsent(rd.Calls)
	}
	tt.committed(rd)
	if err := e.afterCommit(rd, tr); err != nil {
		return err
	}
	e.m.TickDuration.Observe(time.Since(start).Seconds())
	return nil
}

// step asks the core for the tick's decisions, restoring first the
// partitions it names.
func (e *Executor) step(ctx context.Context, pr *prepared) (*partition.Decisions, error) {
	for {
		rd, err := e.core.Step(e.cfg.Now(), &pr.poll)
		if err != nil {
			return nil, errors.Join(ErrFatal, err)
		}
		if len(rd.Restore) == 0 {
			e.stepped(rd)
			return rd, nil
		}
		if err := e.restoreRequired(ctx, rd.Restore); err != nil {
			return nil, err
		}
	}
}

// stepped counts what the core decided before the transaction (as the
// decisions themselves were counted before): snapshot work. (Outcomes of
// a moved partition are the tick's, releasedOutcomes.)
func (e *Executor) stepped(rd *partition.Decisions) {
	e.m.SnapshotEvents.Add(float64(rd.Snapshots))
	e.m.SnapshotRounds.Add(float64(rd.Rounds))
}

func (e *Executor) commitHooks(rd *partition.Decisions) {
	for _, c := range rd.Calls {
		e.cfg.Hooks.at(PointBeforeStartedCommit, c.RK)
	}
	for _, c := range rd.Recorded {
		e.cfg.Hooks.at(PointDuringOutcomeCommit, c.Call.RK)
	}
}

// afterCommit dispatches the calls whose started events are now
// committed and confirmed, then materialises the tick in one synced
// Pebble batch while they run.
//
// Why the calls go first: the committed log is what makes a call safe to
// make, not the view, which is the log folded and only ever catches up
// with it. A crash before the batch is written leaves the view behind the
// log, and the restore that follows folds the same started events, as it
// does for a crash after the batch and before the call returns. So the
// tool's time overlaps the fsync instead of following it (a one-caller
// new key waited the fsync in full, about a millisecond on this disk).
// The call's completion reaches the core only in a later tick, after this
// batch and Committed, so the core sees the same order as before; a batch
// that fails makes its partitions catch up, as it always did for calls
// already dispatched.
//
// A store that a failed write broke (a full disk, an fsync error:
// state.ErrBroken) stops the member (ErrFatal) with the tick's calls
// already dispatched: the crash window above. Their started events are
// committed, so the next owner finds the keys in doubt and the reconciler
// settles them under the same downstream key; their completions are never
// recorded by this member, and nothing is decided on the broken view.
func (e *Executor) afterCommit(rd *partition.Decisions, tr *txnRecords) error {
	e.m.Txns.WithLabelValues("committed").Inc()
	e.m.TickRecords.Observe(float64(rd.Inputs + len(rd.Recorded)))
	for v, n := range rd.Verdicts {
		e.m.Intents.WithLabelValues(v).Add(float64(n))
	}
	e.countAdmissions(rd)
	for _, c := range rd.Calls {
		e.cfg.Hooks.at(PointAfterStartedCommit, c.RK)
	}
	e.changes.notStarted(e.disp.submit(rd.Calls...))
	err := e.materialise(rd, tr)
	if errors.Is(err, state.ErrBroken) {
		return fmt.Errorf("%w: the view cannot be written: %w", ErrFatal, err)
	}
	if err != nil {
		e.cfg.Logger.Error("pebble write failed; the view will catch up from the log", "err", err)
		e.hot.forgetAll() // the store's state is unsure until the restores
	}
	for _, p := range e.core.Committed(rd, err == nil) {
		e.publishDoubt(p)
	}
	e.m.InFlight.Set(float64(e.core.InFlight()))
	return nil
}

// materialise writes the tick's overlay with the checkpoints of the
// events it committed: the view catches up with the log, never leads it.
// A tick that changed no record and no pending read (replays and
// conflicts only) writes checkpoints alone, unsynced: lost in a crash,
// the view lags, and a restore folds the same audit facts again to the
// same records.
func (e *Executor) materialise(rd *partition.Decisions, tr *txnRecords) error {
	b := e.store.NewBatch()
	if err := rd.Overlay.Write(eventlog.Writer{Batch: b}, e.cfg.Names.Events, tr.Checkpoints(), nil); err != nil {
		b.Discard()
		return err
	}
	durability := state.NoSync
	if rd.Overlay.Changed() {
		durability = state.Sync
		e.m.Fsyncs.Inc()
	}
	if err := b.Commit(durability); err != nil {
		return err
	}
	e.hot.materialised(rd.Overlay) // exactly what the batch put
	return nil
}

// afterAbort forgets the tick: its calls are not dispatched, its
// completions stay unrecorded for the next tick, and the polled records
// are fetched again (the session rewound them). An end of unknown outcome
// (Unknown, Unconfirmed) leaves the commit unknown, so the view catches up
// from the log before it is used again.
func (e *Executor) afterAbort(rd *partition.Decisions, tr *txnRecords, out txn.End) {
	result := "aborted"
	if out == txn.Unconfirmed {
		result = "unconfirmed"
	}
	e.m.Txns.WithLabelValues(result).Inc()
	e.hot.forgetAll() // the view was not written; forget rather than reason about an unknown end
	e.notePoison(tr)
	e.core.Aborted(rd, out != txn.Aborted)
}

// callPartitions are the events partitions of calls' started events: the
// commit must be seen there before the calls are made.
func callPartitions(calls []partition.Call) map[int32]bool {
	ps := make(map[int32]bool, 1)
	for _, c := range calls {
		ps[c.P] = true
	}
	return ps
}

// fetchErrors logs fetch errors other than the poll's own timeout.
func (e *Executor) fetchErrors(fs kgo.Fetches) {
	fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, kgo.ErrClientClosed) {
			return
		}
		e.cfg.Logger.Warn("fetch error", "topic", t, "partition", p, "err", err)
	})
}
