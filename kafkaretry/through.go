package kafkaretry

import (
	"context"
	"log/slog"
	"time"
)

// The backoff of Through: from firstBackoff, doubling, to maxBackoff.
const (
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 5 * time.Second
)

// Through runs op until it succeeds, fails with an error retry does not
// accept (nil: Retriable), ctx ends, or budget has passed, backing off
// from 250 ms to 5 s. It returns op's last error and blocks for up to
// budget. what names the operation in the log.
func Through(ctx context.Context, log *slog.Logger, budget time.Duration, what string, retry func(error) bool, op func() error) error {
	if retry == nil {
		retry = Retriable
	}
	deadline := time.Now().Add(budget)
	backoff := firstBackoff
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil {
			if attempt > 1 {
				log.Info(what+" succeeded after the broker came back", "attempts", attempt)
			}
			return nil
		}
		if !retry(err) || time.Now().Add(backoff).After(deadline) {
			return err
		}
		_, why := Classify(err)
		log.Warn(what+" failed; retrying", "err", err, "why", why, "attempt", attempt, "backoff", backoff)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}
