package gateway

import (
	"context"
	"errors"
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

// errBusy: the tenant (or the gateway) has as many lookups in flight and
// waiting as it may; the caller is told 429.
var errBusy = errors.New("gateway: too many key lookups at once")

// lookupLimiter admits key lookups: at most maxConcurrentLookups run at
// once, at most maxTenantLookups of one tenant, and at most
// maxTenantQueued of one tenant (maxQueuedLookups in all) run or wait;
// the rest are refused at once with errBusy. Safe for concurrent use.
type lookupLimiter struct {
	slots chan struct{}

	mu struct {
		sync.Mutex
		admitted int
		tenants  map[string]*tenantLookups
	}
}

// tenantLookups is one tenant's share: its admitted lookups and the slots
// it may hold.
type tenantLookups struct {
	admitted int
	slots    chan struct{}
}

func newLookupLimiter() *lookupLimiter {
	l := &lookupLimiter{slots: make(chan struct{}, maxConcurrentLookups)}
	l.mu.tenants = map[string]*tenantLookups{}
	return l
}

// acquire admits one lookup of tenant and waits for its slots, or
// returns errBusy at once, or ctx's error. The returned release must be
// called when the lookup is done.
func (l *lookupLimiter) acquire(ctx context.Context, tenant string) (release func(), err error) {
	tl, ok := l.admit(tenant)
	if !ok {
		return nil, errBusy
	}
	select {
	case tl.slots <- struct{}{}:
	case <-ctx.Done():
		l.leave(tenant, tl)
		return nil, ctx.Err()
	}
	select {
	case l.slots <- struct{}{}:
	case <-ctx.Done():
		<-tl.slots
		l.leave(tenant, tl)
		return nil, ctx.Err()
	}
	return func() { <-l.slots; <-tl.slots; l.leave(tenant, tl) }, nil
}

func (l *lookupLimiter) admit(tenant string) (*tenantLookups, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tl := l.mu.tenants[tenant]
	if tl != nil && tl.admitted >= maxTenantQueued || l.mu.admitted >= maxQueuedLookups {
		return nil, false
	}
	if tl == nil {
		tl = &tenantLookups{slots: make(chan struct{}, maxTenantLookups)}
		l.mu.tenants[tenant] = tl
	}
	tl.admitted++
	l.mu.admitted++
	return tl, true
}

func (l *lookupLimiter) leave(tenant string, tl *tenantLookups) {
	l.mu.Lock()
	defer l.mu.Unlock()
	tl.admitted--
	l.mu.admitted--
	if tl.admitted == 0 {
		delete(l.mu.tenants, tenant)
	}
}
