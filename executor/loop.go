package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Run is the loop: poll, decide, commit, materialise, dispatch, until ctx
// is cancelled. Then it drains the calls in flight (bounded by
// DrainTimeout), records their outcomes, and leaves the group. It returns
// nil after a clean shutdown.
func (e *Executor) Run(ctx context.Context) error {
	defer close(e.runDone)
	e.ready.Store(true)
	defer e.ready.Store(false)
	for ctx.Err() == nil && !e.crashed.Load() {
		if err := e.iteration(ctx); err != nil {
			return err
		}
		e.noteWarm()
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
	defer e.sess.AllowRebalance()
	e.applyOwnershipChanges()
	if e.holdIfLayoutRefused() && fs.NumRecords() > 0 {
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
	return e.sess.PollRecords(pctx, e.cfg.MaxPollRecords)
}

// errRetryTick marks a tick that could not be decided for a passing
// reason (a restore that timed out, a partition with a gap): nothing was
// produced, so the polled records are rewound and decided again later.
var errRetryTick = errors.New("executor: retry tick")

func (e *Executor) retryLater(ctx context.Context, err error) error {
	if !errors.Is(err, errRetryTick) {
		return err
	}
	e.cfg.Logger.Warn("tick deferred", "err", err)
	if err := e.begin(); err != nil {
		return err
	}
	if _, err := e.sess.End(context.WithoutCancel(ctx), kgo.TryAbort); err != nil {
		if aerr := e.abortThroughOutage(); aerr != nil {
			return fmt.Errorf("%w: rewind: %w (abort: %w)", ErrFatal, err, aerr)
		}
	}
	if _, err := e.resyncOffsets(); err != nil {
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
	if !e.dirty.Swap(false) {
		return nil
	}
	if err := e.begin(); err != nil {
		return err
	}
	if _, err := e.sess.End(context.WithoutCancel(ctx), kgo.TryAbort); err != nil {
		if aerr := e.abortThroughOutage(); aerr != nil {
			return fmt.Errorf("%w: reset session: %w (abort: %w)", ErrFatal, err, aerr)
		}
	}
	_, err := e.resyncOffsets()
	return err
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
