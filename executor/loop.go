package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/state"
)

// Run is the loop: poll, decide, commit, materialise, dispatch, until ctx
// is cancelled. Then it drains the calls in flight (bounded by
// DrainTimeout), records their outcomes, and leaves the group. It returns
// nil after a clean shutdown.
func (e *Executor) Run(ctx context.Context) error {
	defer close(e.runDone)
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { defer close(watched); e.watchDurability(wctx) }()
	defer func() { stopWatch(); <-watched }()
	e.ready.Store(true)
	defer e.ready.Store(false)
	for ctx.Err() == nil && !e.crashed.Load() {
		if err := e.iteration(ctx); err != nil {
			return err
		}
		e.noteWarm()
		e.noteRestored()
	}
	if e.crashed.Load() {
		return nil
	}
	return e.shutdown()
}

// iteration is one poll and one tick. Between the poll and AllowRebalance
// no group callback can run (BlockRebalanceOnPoll), so what the tick knows of
// ownership cannot change under it.
func (e *Executor) iteration(ctx context.Context) error {
	if err := e.resetSessionIfDirty(ctx); err != nil {
		return err
	}
	fs := e.poll(ctx)
	defer e.client.AllowRebalance()
	e.applyOwnershipChanges()
	if e.guard.holdIfLayoutRefused() && fs.NumRecords() > 0 {
		return e.retryLater(ctx, fmt.Errorf("%w: the layout is refused; %d polled records are rewound", errRetryTick, fs.NumRecords()))
	}
	if err := e.tick(ctx, fs); err != nil {
		return e.retryLater(ctx, err)
	}
	if e.rebalancePending.Swap(false) {
		return e.drain(e.cfg.DrainTimeout)
	}
	return nil
}

// poll returns the next records, or nothing when the dispatcher's queue is
// full (backpressure) or no record came within PollWait.
func (e *Executor) poll(ctx context.Context) kgo.Fetches {
	pctx, cancel := context.WithTimeout(ctx, PollWait)
	defer cancel()
	e.wakeMu.Lock()
	e.wakeFn = cancel
	e.wakeMu.Unlock()
	defer func() { e.wakeMu.Lock(); e.wakeFn = nil; e.wakeMu.Unlock() }()
	if len(e.disp.out) > 0 {
		cancel() // outcomes are waiting: take only what is already buffered
	}
	if e.disp.queued() >= e.cfg.MaxQueued {
		<-pctx.Done()
		return nil
	}
	return e.client.PollRecords(pctx, e.cfg.MaxPollRecords)
}

func (e *Executor) retryLater(ctx context.Context, err error) error {
	if errors.Is(err, state.ErrBroken) && !errors.Is(err, ErrFatal) {
		// A restore or a read met a store a failed write broke: no retry
		// heals it (state.ErrBroken), the member stops.
		return fmt.Errorf("%w: the view cannot be used: %w", ErrFatal, err)
	}
	if !errors.Is(err, errRetryTick) {
		return err
	}
	e.cfg.Logger.Warn("tick deferred", "err", err)
	if err := e.txns.Reset(ctx, "rewind"); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-time.After(retryTickPause):
	}
	return nil
}

// wake ends the current poll early. Safe for concurrent use.
func (e *Executor) wake() {
	e.wakeMu.Lock()
	defer e.wakeMu.Unlock()
	if e.wakeFn != nil {
		e.wakeFn()
	}
}

// resetSessionIfDirty ends an empty transaction after a group callback ran.
// The session marks itself failed on every revoke so that a transaction
// spanning a rebalance aborts; our transactions never span one (callbacks
// run between ticks), so the mark is cleared here rather than costing the
// next real tick an abort.
func (e *Executor) resetSessionIfDirty(ctx context.Context) error {
	if !e.changes.dirty.Swap(false) {
		return nil
	}
	return e.txns.Reset(ctx, "reset session")
}

// onCallbackBlocked runs when the group wants to revoke, assign or mark
// partitions lost while our poll blocks it: drain at the end of the tick,
// and stop waiting in a transaction end that cannot finish first.
func (e *Executor) onCallbackBlocked(context.Context, *kgo.Client) {
	e.rebalancePending.Store(true)
	e.wake()
	e.txns.Interrupt()
}
