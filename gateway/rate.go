package gateway

import (
	"math"
	"sync"
	"time"
)

// rates holds one token bucket per tenant: its calls_per_second, and its
// burst as the bucket's size. A bucket starts full. Safe for concurrent
// use.
type rates struct {
	mu      sync.Mutex
	buckets map[string]*bucket
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was computed
	rate   float64
	burst  int
}

// maxBuckets bounds the buckets kept: a reload can rename every tenant,
// so past twice the largest tenants file they are dropped, and every
// tenant starts again with a full bucket (at worst one burst more).
const maxBuckets = 2 * maxTenants

func newRates() *rates { return &rates{buckets: map[string]*bucket{}} }

// take takes one call from tenant's bucket at now, or says how long until
// the bucket holds one. A rate of 0 takes nothing: no limit.
func (r *rates) take(tenant string, l Limits, now time.Time) (wait time.Duration, ok bool) {
	if l.CallsPerSecond <= 0 {
		return 0, true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.bucketLocked(tenant, l, now)
	b.tokens = min(float64(b.burst), b.tokens+max(0, now.Sub(b.at).Seconds())*b.rate)
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return 0, true
	}
	return time.Duration((1 - b.tokens) / b.rate * float64(time.Second)), false
}

// bucketLocked returns tenant's bucket, made anew (full) when it has none
// or its limits changed.
func (r *rates) bucketLocked(tenant string, l Limits, now time.Time) *bucket {
	b := r.buckets[tenant]
	if b != nil && b.rate == l.CallsPerSecond && b.burst == l.Burst {
		return b
	}
	if len(r.buckets) >= maxBuckets {
		clear(r.buckets)
	}
	b = &bucket{tokens: float64(l.Burst), at: now, rate: l.CallsPerSecond, burst: l.Burst}
	r.buckets[tenant] = b
	return b
}

// retrySeconds is a wait as a Retry-After: whole seconds, at least 1.
func retrySeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
