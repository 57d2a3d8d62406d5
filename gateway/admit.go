package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// admission admits a tenant's calls before anything is produced: its
// concurrent_calls (a limiter where nothing waits, so a call over the
// limit is refused at once rather than held with its connection), then
// its calls_per_second (a token bucket). Safe for concurrent use.
//
// Why at the gateway and not only in the executor: the gateway knows the
// caller (the credential's tenant) and can refuse before the intent costs
// a produce, a transaction and a place in the executor's queues; the
// executor, which also serves producers that write to Kafka directly,
// bounds what reaches it on its own (docs/SECURITY.md, "Capacity").
type admission struct {
	calls *limiter
	rates *rates
	now   func() time.Time
}

func newAdmission() *admission {
	return &admission{calls: newLimiter(share{run: maxCallsInFlight, queue: maxCallsInFlight}), rates: newRates(), now: time.Now}
}

// limitError is a call refused by a limit: nothing was produced. The
// caller is told 429 with RetryAfter (seconds) and the limit's name.
type limitError struct {
	Limit      string // limitConcurrent, limitRate, limitGateway, a lookup limit or an executor's (busy.go)
	RetryAfter int
	Detail     string
	// Status and Code, when set, are the answer's HTTP status and problem
	// code; by default 429 and too_many_requests (an executor's refusal
	// held: busy.go).
	Status int
	Code   string
}

func (e *limitError) Error() string { return "gateway: over the limit " + e.Limit + ": " + e.Detail }

// limitOf returns the limit a refusal names.
func limitOf(err error) (*limitError, bool) {
	var le *limitError
	if errors.As(err, &le) {
		return le, true
	}
	return nil, false
}

// admit takes one call of tenant under its limits l, or refuses it with a
// *limitError. The returned release frees the call's place in
// concurrent_calls: when its answer comes (or can no longer be awaited);
// calling it again does nothing.
func (a *admission) admit(tenant string, l Limits) (release func(), err error) {
	// Nothing waits (queue == run, for the tenant and for the whole), so
	// the context is never read.
	release, err = a.calls.acquire(context.Background(), tenant, share{run: l.ConcurrentCalls, queue: l.ConcurrentCalls})
	switch {
	case errors.Is(err, errBusy):
		return nil, &limitError{Limit: limitConcurrent, RetryAfter: retryBusy, Detail: fmt.Sprintf(
			"the tenant has %d calls in flight at this gateway instance, its concurrent_calls limit (a call is in flight until its answer comes, "+
				"also after a 202); nothing was sent: retry with the same key after %d s", l.ConcurrentCalls, retryBusy)}
	case errors.Is(err, errFull):
		return nil, &limitError{Limit: limitGateway, RetryAfter: retryBusy, Detail: fmt.Sprintf(
			"this gateway instance has %d calls in flight, all tenants together; nothing was sent: retry with the same key after %d s", maxCallsInFlight, retryBusy)}
	case err != nil:
		return nil, err
	}
	if wait, ok := a.rates.take(tenant, l, a.now()); !ok {
		release()
		ra := retrySeconds(wait)
		return nil, &limitError{Limit: limitRate, RetryAfter: ra, Detail: fmt.Sprintf(
			"the tenant's calls are over its calls_per_second limit (%g a second, bursts of %d); nothing was sent: retry with the same key after %d s",
			l.CallsPerSecond, l.Burst, ra)}
	}
	return release, nil
}
