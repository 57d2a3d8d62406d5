package tools

import (
	"context"
	"math/rand/v2"
	"time"
)

const (
	backoffStart = 50 * time.Millisecond
	backoffCap   = 2 * time.Second
)

// backoff returns the wait before retry number n (1-based): exponential
// from 50ms, capped at 2s, with "equal jitter" (half fixed, half random) so
// that executors retrying one failed tool do not retry in lockstep.
func backoff(n int) time.Duration {
	d := backoffStart
	for i := 1; i < n && d < backoffCap; i++ {
		d *= 2
	}
	d = min(d, backoffCap)
	return d/2 + rand.N(d/2+1)
}

// sleepCtx waits d or until ctx ends, whichever is first; it returns
// ctx.Err() in the latter case.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
