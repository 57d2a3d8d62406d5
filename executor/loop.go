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
	defer e.runCourier()()
	e.ready.Store(true)
	defer e.ready.Store(false)
	defer e.allowRebalances() // leaving the group (Close) waits for the gate
	for ctx.Err() == nil && !e.crashed.Load() {
		if err := e.iteration(ctx); err != nil {
			return err
		}
		e.noteWarm()
		e.noteRestored()
		e.turned()
	}
	if e.crashed.Load() {
		return nil
	}
	return e.shutdown()
}

// turned tells Config.Turned that the loop went round.
func (e *Executor) turned() {
	if e.cfg.Turned != nil {
		e.cfg.Turned()
	}
}

// iteration is one poll and one tick. The loop holds the rebalance gate
// throughout (gate.go), so no group callback runs under a tick and what
// it knows of ownership cannot change; a rebalance is let through after a
// drain, or while the member is quiet.
func (e *Executor) iteration(ctx context.Context) error {
	e.holdRebalances()
	if err := e.resetSessionIfDirty(ctx); err != nil {
		return err
	}
	fs := e.poll(ctx)
	e.applyOwnershipChanges()
	if err := e.decide(ctx, fs); err != nil {
		return err
	}
	if e.rebalancePending.Swap(false) {
		err := e.drain(e.cfg.DrainTimeout)
		e.allowRebalances()
		return err
	}
	if e.quiet() {
		e.allowRebalances()
	}
	return nil
}

// decide ticks on what was polled; a tick that cannot be built now is
// retried later.
func (e *Executor) decide(ctx context.Context, fs kgo.Fetches) error {
	if e.guard.holdIfLayoutRefused() && fs.NumRecords() > 0 {
		return e.retryLater(ctx, fmt.Errorf("%w: the layout is refused; %d polled records are rewound", errRetryTick, fs.NumRecords()))
	}
	if err := e.tick(ctx, fs); err != nil {
		return e.retryLater(ctx, err)
	}
	return nil
}

// poll returns the next records, or nothing when the loop has polled
// maxHeldPolls times since it last opened the rebalance gate (gate.go),
// or no record came within PollWait. A full tool never stops the poll:
// the core refuses the calls it has no place for (partition/admission.go).
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
	if e.pollsOverdue() {
		<-pctx.Done()
		return nil
	}
	e.gate.polls++
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
// partitions lost while the loop holds the gate (gate.go): drain at the
// end of the tick, and stop waiting in a transaction end that cannot
// finish first.
func (e *Executor) onCallbackBlocked(context.Context, *kgo.Client) {
	e.rebalancePending.Store(true)
	e.wake()
	e.txns.Interrupt()
}
