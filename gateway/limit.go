package gateway

import (
	"context"
	"errors"
	"slices"
	"sync"
)

// Bounds of the key lookups (GET and compensate of a key). Why these
// values: a lookup holds a slot for one round trip to the executor (or,
// for an executor of an older version, a read of one events partition),
// so a few slots serve many callers; a tenant may hold at most half of
// them, so that no one tenant's flood can leave another without one; and
// what cannot wait in the bounded queue is told 429 at once, with
// Retry-After, instead of holding a connection and a goroutine.
const (
	maxConcurrentLookups = 4
	maxTenantLookups     = maxConcurrentLookups / 2 // in flight per tenant
	maxTenantQueued      = 8                        // in flight and waiting, per tenant
	maxQueuedLookups     = 64                       // in flight and waiting, all tenants
	retryBusy            = 1                        // Retry-After of a 429, seconds
)

// maxCallsInFlight bounds the calls in flight of one gateway instance,
// all tenants together (each tenant's own bound is its concurrent_calls):
// each holds a waiter and a timer until its answer, so the instance's
// memory stays bounded however many tenants the file lists.
const maxCallsInFlight = 16384

var (
	// errBusy: the tenant has as much in flight and waiting as its share
	// allows; the caller is told 429.
	errBusy = errors.New("gateway: the tenant has as many requests at once as it may")
	// errFull: the instance has as much in flight and waiting as it may,
	// all tenants together; the caller is told 429.
	errFull = errors.New("gateway: the gateway has as many requests at once as it may")
)

// share is what one tenant may take of a limiter: run at once, and run
// or wait together (queue >= run; queue == run: nothing ever waits).
type share struct{ run, queue int }

// limiter admits work by tenant: at most total.run run at once and
// total.queue run or wait, all tenants together, and of these at most a
// tenant's share; the rest is refused at once, errBusy for a tenant over
// its share, errFull for the whole. Waiting work starts in order of
// arrival, passing over a tenant that runs its share already, so one
// tenant's queue never holds back another's. The share is the caller's at
// each acquire, so a reload's new limits apply at the next request. Safe
// for concurrent use.
//
// The key lookups use one (4 at once, 2 per tenant, queues of 8 per
// tenant and 64 in all); the calls another, where nothing waits: a
// tenant's concurrent_calls, up to maxCallsInFlight in all.
type limiter struct {
	total share

	mu struct {
		sync.Mutex
		admitted, running int
		tenants           map[string]*tenantUse
		waiting           []*slotWaiter // in order of arrival
	}
}

// tenantUse is one tenant's admitted and running work, and its latest
// share.
type tenantUse struct {
	admitted, running int
	share             share
}

// slotWaiter is work admitted and waiting to run.
type slotWaiter struct {
	tu      *tenantUse
	ready   chan struct{} // closed when granted
	granted bool          // under limiter.mu
}

func newLimiter(total share) *limiter {
	l := &limiter{total: total}
	l.mu.tenants = map[string]*tenantUse{}
	return l
}

func newLookupLimiter() *limiter {
	return newLimiter(share{run: maxConcurrentLookups, queue: maxQueuedLookups})
}

// lookupShare is every tenant's share of the lookups.
var lookupShare = share{run: maxTenantLookups, queue: maxTenantQueued}

// acquire admits one unit of tenant's work under its share s, and waits
// for it to run; or returns errBusy or errFull at once, or ctx's error
// while waiting. The returned release must be called when the work is
// done; calling it again does nothing.
func (l *limiter) acquire(ctx context.Context, tenant string, s share) (release func(), err error) {
	l.mu.Lock()
	tu, err := l.admitLocked(tenant, s)
	if err != nil {
		l.mu.Unlock()
		return nil, err
	}
	release = l.releaser(tenant, tu)
	if l.canRunLocked(tu) {
		tu.running++
		l.mu.running++
		l.mu.Unlock()
		return release, nil
	}
	w := &slotWaiter{tu: tu, ready: make(chan struct{})}
	l.mu.waiting = append(l.mu.waiting, w)
	l.mu.Unlock()
	select {
	case <-w.ready:
		return release, nil
	case <-ctx.Done():
		l.cancel(tenant, w, release)
		return nil, ctx.Err()
	}
}

func (l *limiter) admitLocked(tenant string, s share) (*tenantUse, error) {
	tu := l.mu.tenants[tenant]
	switch {
	case tu != nil && tu.admitted >= s.queue || tu == nil && s.queue < 1:
		return nil, errBusy
	case l.mu.admitted >= l.total.queue:
		return nil, errFull
	}
	if tu == nil {
		tu = &tenantUse{}
		l.mu.tenants[tenant] = tu
	}
	tu.share = s
	tu.admitted++
	l.mu.admitted++
	return tu, nil
}

func (l *limiter) canRunLocked(tu *tenantUse) bool {
	return tu.running < tu.share.run && l.mu.running < l.total.run
}

// cancel withdraws a waiter whose context ended; one granted meanwhile
// is released.
func (l *limiter) cancel(tenant string, w *slotWaiter, release func()) {
	l.mu.Lock()
	if w.granted {
		l.mu.Unlock()
		release()
		return
	}
	if i := slices.Index(l.mu.waiting, w); i >= 0 {
		l.mu.waiting = slices.Delete(l.mu.waiting, i, i+1)
	}
	l.leaveLocked(tenant, w.tu)
	l.mu.Unlock()
}

// releaser ends one running unit of tenant's work, once, and starts the
// waiting work that may run now.
func (l *limiter) releaser(tenant string, tu *tenantUse) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			tu.running--
			l.mu.running--
			l.leaveLocked(tenant, tu)
			l.grantLocked()
		})
	}
}

func (l *limiter) leaveLocked(tenant string, tu *tenantUse) {
	tu.admitted--
	l.mu.admitted--
	if tu.admitted == 0 {
		delete(l.mu.tenants, tenant)
	}
}

// grantLocked starts the waiting work that may run, oldest first.
func (l *limiter) grantLocked() {
	for i := 0; i < len(l.mu.waiting) && l.mu.running < l.total.run; {
		w := l.mu.waiting[i]
		if !l.canRunLocked(w.tu) {
			i++
			continue
		}
		w.tu.running++
		l.mu.running++
		w.granted = true
		close(w.ready)
		l.mu.waiting = slices.Delete(l.mu.waiting, i, i+1)
	}
}
