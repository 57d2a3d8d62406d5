package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/topics"
)

// Partitions whose restore found a gap (eventlog/gap.go has the why).
//
// Such a partition is not decided: its fetches are paused, so the other
// partitions of the member go on, and its offsets do not move, so none of
// its intents is lost. /readyz fails and toolexec_executor_restore_gaps
// counts it, which an alert watches. Every gapRetry the member tries the
// restore again: a snapshot round written since (by a member that still
// has the view, say) ends the gap. Revoking the partition forgets it.

// gapRetry is how often a gapped partition's restore is tried again: it
// reads the partition's log, so not every tick.
const gapRetry = 30 * time.Second

type gap struct {
	err     *eventlog.GapError
	lastTry time.Time
}

// noteGap records p as gapped and pauses its fetches.
func (e *Executor) noteGap(p int32, ge *eventlog.GapError) {
	if g, ok := e.gaps[p]; ok {
		g.err, g.lastTry = ge, time.Now()
		return
	}
	e.gaps[p] = &gap{err: ge, lastTry: time.Now()}
	e.gapCount.Store(int32(len(e.gaps)))
	e.m.RestoreGaps.Set(float64(len(e.gaps)))
	e.sess.Client().PauseFetchPartitions(e.coPartitions(p))
	e.cfg.Logger.Error("partition not decided: its event log lost events the view needs (docs/DESIGN.md, gaps)",
		"partition", p, "checkpoint", ge.Checkpoint, "log_start", ge.LogStart)
}

// forgetGap ends p's gap (restored, or no longer owned) and resumes it.
func (e *Executor) forgetGap(p int32) {
	if _, ok := e.gaps[p]; !ok {
		return
	}
	delete(e.gaps, p)
	e.gapCount.Store(int32(len(e.gaps)))
	e.m.RestoreGaps.Set(float64(len(e.gaps)))
	e.sess.Client().ResumeFetchPartitions(e.coPartitions(p))
}

// gapWait reports, for a partition with a known gap, that it is not to be
// restored yet: its records (polled before the pause took) are rewound.
func (e *Executor) gapWait(p int32) error {
	g, ok := e.gaps[p]
	if !ok || time.Since(g.lastTry) >= gapRetry {
		return nil
	}
	return fmt.Errorf("%w: partition %d: %w", errRetryTick, p, g.err)
}

// restoreGapped tries one gapped partition's restore again, at most every
// gapRetry; on success its fetches resume.
func (e *Executor) restoreGapped(ctx context.Context) {
	for p, g := range e.gaps {
		if time.Since(g.lastTry) < gapRetry {
			continue
		}
		g.lastTry = time.Now()
		if _, owned := e.owned[p]; !owned {
			e.forgetGap(p)
			return
		}
		if err := e.restore(ctx, p, time.Second); err == nil {
			e.cfg.Logger.Info("gapped partition restored from a snapshot round; deciding again", "partition", p)
		}
		return
	}
}

// asGap returns the gap err reports, if any.
func asGap(err error) (*eventlog.GapError, bool) {
	var ge *eventlog.GapError
	return ge, errors.As(err, &ge)
}

func (e *Executor) coPartitions(p int32) map[string][]int32 {
	return map[string][]int32{e.cfg.Names.Intents: {p}, e.cfg.Names.Control: {p}}
}

// partitionOf is the owner partition of (tenant, key).
func (e *Executor) partitionOf(tenant, key string) int32 {
	return topics.Partition(topics.RoutingKey(tenant, key), e.layout.Partitions)
}
