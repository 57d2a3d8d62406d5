package httpserve

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// WatchLive runs check now and then every interval, each bounded by
// timeout, until ctx ends, and returns a function reporting whether the
// last check passed (false before the first one ends). The first result
// and every change are logged, a failure with its error. The checks are a
// loop of live, named what: a check that does not end (one that ignores
// its context) stalls it, and /healthz fails a minute after the check's
// interval and timeout.
//
// Why not check in the /readyz handler: a probe's request would wait on
// the dependency (a broker that does not answer takes the whole timeout),
// and every probe of every kubelet would be one more request to it.
func WatchLive(ctx context.Context, live *Liveness, what string, interval, timeout time.Duration, check func(context.Context) error, log *slog.Logger) func() bool {
	live.Loop(what, interval+timeout+time.Minute)
	return watch(ctx, what, interval, timeout, check, log, func() { live.Beat(what) })
}

func watch(ctx context.Context, what string, interval, timeout time.Duration, check func(context.Context) error, log *slog.Logger, beat func()) func() bool {
	var ok atomic.Bool
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for first := true; ; first = false {
			beat()
			cctx, cancel := context.WithTimeout(ctx, timeout)
			err := check(cctx)
			cancel()
			if ctx.Err() != nil {
				return
			}
			if was := ok.Swap(err == nil); first || was != (err == nil) {
				logCheck(log, what, err)
			}
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return ok.Load
}

func logCheck(log *slog.Logger, what string, err error) {
	if err != nil {
		log.Warn(what+": not ready", "err", err)
		return
	}
	log.Info(what + ": ready")
}
