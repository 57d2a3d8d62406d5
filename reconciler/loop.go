package reconciler

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// maxPollWait bounds one poll, so results and scans are never held up by
// a quiet log.
const maxPollWait = 250 * time.Millisecond

// Run follows the event log and investigates keys in doubt until ctx is
// cancelled; then it stops the running retries and probes (their answers
// are dropped: the next run asks again) and returns nil. It returns an
// error wrapping ErrFatal when it cannot go on, and one wrapping
// ErrCrashed after a fault hook asked for it. It blocks; call Close after
// it returned.
func (r *Reconciler) Run(ctx context.Context) error {
	err := r.loop(ctx)
	r.work.stop()
	r.ready.Store(false)
	return err
}

func (r *Reconciler) loop(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := r.iterate(ctx); err != nil {
			return err
		}
		if r.cfg.Turned != nil {
			r.cfg.Turned()
		}
	}
	return nil
}

// iterate is one turn: poll, apply ownership changes, fold, collect the
// finished retries and probes, and every ScanInterval measure the lag and
// examine the keys in doubt. From the poll to AllowRebalance no group
// callback runs, so the turn sees one assignment.
func (r *Reconciler) iterate(ctx context.Context) error {
	fs := r.poll(ctx)
	defer r.cl.AllowRebalance()
	if fs.IsClientClosed() {
		return ErrClosed
	}
	if err := r.applyOwnership(ctx); err != nil {
		return err
	}
	r.fetchErrors(fs)
	if err := r.fold(fs); err != nil {
		return err
	}
	if err := r.collect(ctx); err != nil {
		return err
	}
	if time.Since(r.lastScan) < r.cfg.ScanInterval {
		return nil
	}
	r.lastScan = time.Now()
	r.measureLag(ctx)
	return r.scan(ctx)
}

// poll waits for events at most maxPollWait; a finished retry or probe
// ends the wait early (wake).
func (r *Reconciler) poll(ctx context.Context) kgo.Fetches {
	pctx, cancel := context.WithTimeout(ctx, min(maxPollWait, r.cfg.ScanInterval))
	defer cancel()
	r.wakeMu.Lock()
	r.wakeFn = cancel
	r.wakeMu.Unlock()
	fs := r.cl.PollRecords(pctx, r.cfg.MaxPollRecords)
	r.wakeMu.Lock()
	r.wakeFn = nil
	r.wakeMu.Unlock()
	return fs
}

// wake ends the current poll early. Safe for concurrent use.
func (r *Reconciler) wake() {
	r.wakeMu.Lock()
	defer r.wakeMu.Unlock()
	if r.wakeFn != nil {
		r.wakeFn()
	}
}

func (r *Reconciler) fetchErrors(fs kgo.Fetches) {
	fs.EachError(func(t string, p int32, err error) {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return // the poll's own timeout or a wake-up
		}
		r.cfg.Logger.Warn("reconciler: fetch error", "topic", t, "partition", p, "err", err)
	})
}

// collect handles every retry and probe that finished since the last turn,
// without blocking.
func (r *Reconciler) collect(ctx context.Context) error {
	for {
		select {
		case res := <-r.work.out:
			r.work.done()
			if err := r.finish(ctx, res); err != nil {
				return err
			}
		default:
			return nil
		}
	}
}
