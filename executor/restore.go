package executor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/topics"
)

// Every restore of a partition's view from the event log, and what
// triggers it (the core decides; partition/restore.go):
//
//   - the first decision of an assignment that reads the partition, or
//     one after a transaction end whose outcome is unknown or a view
//     write that failed: the core's Decisions names it (restoreRequired),
//     bounded by the transaction timeout and restoreSettleMargin; a
//     failure defers the tick;
//   - a partition idle since its assignment (IdleRestore) and a gapped
//     partition due for a retry (GapRetry), before each tick's decisions,
//     one each per tick, bounded by backgroundSettle, never failing the
//     tick.
//
// A restore that finds a gap the log cannot bridge pauses the partition's
// fetches (the member's other partitions go on, its offsets do not move,
// so no intent is lost), fails /readyz and counts restore_gaps, which an
// alert watches. Revoking the partition or a later restore ends the gap.
// A restore that cannot settle (a transaction open on the events
// partition) makes the member look for hanging transactions.

// restoreRequired restores the partitions a Decisions value names before the tick
// can be decided, several at once (restoreMany). An error defers the
// tick (errRetryTick) or is fatal.
func (e *Executor) restoreRequired(ctx context.Context, ps []int32) error {
	ready, stop := e.restorable(ps)
	if err := e.restoreMany(ctx, ready, e.cfg.TransactionTimeout+restoreSettleMargin); err != nil {
		return err
	}
	return stop
}

// restorable returns the partitions of ps, in order, up to the first
// one that may not be restored now, and why that one may not.
func (e *Executor) restorable(ps []int32) ([]int32, error) {
	for i, p := range ps {
		if !e.core.Owns(p) {
			return ps[:i], fmt.Errorf("%w: partition %d is not owned by this member", ErrFatal, p)
		}
		if err := e.core.GapWait(e.cfg.Now(), p); err != nil {
			return ps[:i], fmt.Errorf("%w: %w", errRetryTick, err)
		}
	}
	return ps, nil
}

// restoreBackground takes the restores the core wants without a record:
// one idle partition and one gapped partition due for a retry per tick.
func (e *Executor) restoreBackground(ctx context.Context) {
	now := e.cfg.Now()
	if p, ok := e.core.IdleRestore(now); ok {
		if err := e.restore(ctx, p, backgroundSettle); err != nil {
			e.cfg.Logger.Debug("idle restore deferred", "partition", p, "err", err)
		}
	}
	if p, ok := e.core.GapRetry(now); ok {
		if err := e.restore(ctx, p, backgroundSettle); err == nil {
			e.cfg.Logger.Info("gapped partition restored from a snapshot round; deciding again", "partition", p)
		}
	}
}

// restore brings the view of p up to the log, waiting at most settle for
// the transactions open on its events partition. It runs after the first
// poll that returned p's records, when the stable offset fetch has
// already waited out the previous owner's pending transaction (KIP-447);
// eventlog.Target waits out the rest.
func (e *Executor) restore(ctx context.Context, p int32, settle time.Duration) error {
	return e.restoreMany(ctx, []int32{p}, settle)
}

// restoreMany restores ps, at most maxConcurrentRestores (and the cores)
// at once, and returns the error of the first that failed, after every
// one has ended. Only the folds run on other goroutines: they write
// their own partitions' keys through the store, which is safe for
// concurrent use, while the loop waits here, so no tick reads those
// partitions meanwhile. The loop alone touches the core, the hot records
// and the session, before the folds and after them, in the order of ps.
func (e *Executor) restoreMany(ctx context.Context, ps []int32, settle time.Duration) error {
	// The restores write ps's records (and may clear them after a gap):
	// their hot copies are forgotten before and after, whatever the
	// result.
	for _, p := range ps {
		e.hot.forgetPartition(p)
	}
	results := e.folds.foldAll(ctx, ps, settle)
	for _, p := range ps {
		e.hot.forgetPartition(p)
	}
	var first error
	for i, p := range ps {
		if err := e.restored(ctx, p, results[i]); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// restored takes the result of p's restore into the core, on the loop.
func (e *Executor) restored(ctx context.Context, p int32, r foldResult) error {
	if err := r.err; err != nil {
		if errors.Is(err, eventlog.ErrRestoreTimeout) {
			e.txns.CheckHanging(ctx)
		}
		var ge *eventlog.GapError
		if errors.As(err, &ge) {
			e.noteGap(p, ge)
		}
		return fmt.Errorf("%w: restore partition %d: %w", errRetryTick, p, err)
	}
	stats := r.stats
	resumed, gapEnded := e.core.Restored(p)
	if gapEnded {
		e.gapChanged()
		e.client.ResumeFetchPartitions(coPartitions(e.cfg.Names, p))
	}
	e.m.Restores.Observe(stats.Duration.Seconds())
	e.m.RestoreEvents.Add(float64(stats.Events))
	level := slog.LevelInfo
	if e.restores.add(int64(stats.Events)) {
		level = slog.LevelDebug // summed up in "partitions restored"
	}
	e.cfg.Logger.Log(ctx, level, "partition restored", "partition", p, "from", stats.From, "to", stats.To, "events", stats.Events, "took", stats.Duration)
	e.publishDoubt(p)
	e.resumeReads(p, resumed)
	return nil
}

// resumeReads dispatches the reads a previous owner left unanswered
// (their read_started events are already committed).
func (e *Executor) resumeReads(p int32, calls []partition.Call) {
	if len(calls) == 0 {
		return
	}
	e.cfg.Logger.Info("calling again the reads a previous owner left unanswered", "partition", p, "reads", len(calls))
	e.m.ReadsResumed.Add(float64(len(calls)))
	for _, c := range calls {
		e.cfg.Hooks.at(PointAfterStartedCommit, c.RK) // their read_started events are committed
	}
	e.changes.notStarted(e.disp.submit(calls...))
}

// noteGap records p as gapped and, the first time, pauses its fetches.
func (e *Executor) noteGap(p int32, ge *eventlog.GapError) {
	if !e.core.Gapped(e.cfg.Now(), p, ge) {
		return
	}
	e.gapChanged()
	e.client.PauseFetchPartitions(coPartitions(e.cfg.Names, p))
	e.cfg.Logger.Error("partition not decided: its event log lost events the view needs (docs/DESIGN.md, gaps)",
		"partition", p, "checkpoint", ge.Checkpoint, "log_start", ge.LogStart)
}

// gapChanged republishes the number of gapped partitions (Ready, metric).
func (e *Executor) gapChanged() {
	n := e.core.Gaps()
	e.gapCount.Store(int32(n))
	e.m.RestoreGaps.Set(float64(n))
}

// coPartitions names partition p of intents and of control, which move
// together.
func coPartitions(n topics.Names, p int32) map[string][]int32 {
	return map[string][]int32{n.Intents: {p}, n.Control: {p}}
}

// publishDoubt sets the keys-in-doubt gauge of p: unsettled keys with no
// call running here.
func (e *Executor) publishDoubt(p int32) {
	e.m.KeysInDoubt.WithLabelValues(partitionLabel(p)).Set(float64(e.core.KeysInDoubt(p)))
}
