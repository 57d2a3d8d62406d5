package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/executor/partition"
)

// Every restore of a partition's view from the event log, and what
// triggers it (the core decides; partition/restore.go):
//
//   - the first decision of an assignment that reads the partition, or
//     one after a transaction end whose outcome is unknown or a view
//     write that failed: the core's Ready names it (restoreRequired),
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

// restoreRequired restores the partitions a Ready names before the tick
// can be decided. An error defers the tick (errRetryTick) or is fatal.
func (e *Executor) restoreRequired(ctx context.Context, ps []int32) error {
	for _, p := range ps {
		if !e.core.Owns(p) {
			return fmt.Errorf("%w: partition %d is not owned by this member", ErrFatal, p)
		}
		if err := e.core.GapWait(e.cfg.Now(), p); err != nil {
			return fmt.Errorf("%w: %w", errRetryTick, err)
		}
		if err := e.restore(ctx, p, e.cfg.TransactionTimeout+restoreSettleMargin); err != nil {
			return err
		}
	}
	return nil
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
	// The restore writes p's records (and may clear them after a gap):
	// the hot copies are forgotten before and after, whatever the result.
	e.hot.forgetPartition(p)
	defer e.hot.forgetPartition(p)
	stats, err := eventlog.RestoreInto(ctx, e.store, e.adm, p, eventlog.RestoreOptions{
		Seeds: e.cfg.Brokers, Topic: e.cfg.Names.Events, SettleWait: settle,
		ClientOpts:  append([]kgo.Opt{kgo.WithLogger(kgoLogger{l: e.cfg.Logger})}, e.cfg.Connect...),
		PartitionOf: e.partitionOf,
	})
	if err != nil {
		if errors.Is(err, eventlog.ErrRestoreTimeout) {
			e.checkHanging(ctx)
		}
		var ge *eventlog.GapError
		if errors.As(err, &ge) {
			e.noteGap(p, ge)
		}
		return fmt.Errorf("%w: restore partition %d: %w", errRetryTick, p, err)
	}
	resumed, gapEnded := e.core.Restored(p)
	if gapEnded {
		e.gapChanged()
		e.sess.Client().ResumeFetchPartitions(e.coPartitions(p))
	}
	e.m.Restores.Observe(stats.Duration.Seconds())
	e.m.RestoreEvents.Add(float64(stats.Events))
	e.cfg.Logger.Info("partition restored", "partition", p, "from", stats.From, "to", stats.To, "events", stats.Events, "took", stats.Duration)
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
	e.disp.submit(calls...)
}

// noteGap records p as gapped and, the first time, pauses its fetches.
func (e *Executor) noteGap(p int32, ge *eventlog.GapError) {
	if !e.core.Gapped(e.cfg.Now(), p, ge) {
		return
	}
	e.gapChanged()
	e.sess.Client().PauseFetchPartitions(e.coPartitions(p))
	e.cfg.Logger.Error("partition not decided: its event log lost events the view needs (docs/DESIGN.md, gaps)",
		"partition", p, "checkpoint", ge.Checkpoint, "log_start", ge.LogStart)
}

// gapChanged republishes the number of gapped partitions (Ready, metric).
func (e *Executor) gapChanged() {
	n := e.core.Gaps()
	e.gapCount.Store(int32(n))
	e.m.RestoreGaps.Set(float64(n))
}

func (e *Executor) coPartitions(p int32) map[string][]int32 {
	return map[string][]int32{e.cfg.Names.Intents: {p}, e.cfg.Names.Control: {p}}
}

// publishDoubt sets the keys-in-doubt gauge of p: unsettled keys with no
// call running here.
func (e *Executor) publishDoubt(p int32) {
	e.m.KeysInDoubt.WithLabelValues(partitionLabel(p)).Set(float64(e.core.KeysInDoubt(p)))
}
