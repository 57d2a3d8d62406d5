package executor

import (
	"sync"
	"time"

	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/tools"
)

// The member's places (partition/admission.go) and the tenants' metrics.

// admission is the core's bound on the calls this member holds: each
// tool's max_in_flight running and toolQueueRounds times as many
// waiting, and member calls in all. Its ToolCap is called by the core
// alone (the loop): the registry is fixed after start, so each tool is
// looked up once, without a lock.
func admission(reg *tools.Registry, member int) partition.Admission {
	caps := map[string]int{}
	return partition.Admission{
		MemberCap: member,
		ToolCap: func(tool string) int {
			if c, ok := caps[tool]; ok {
				return c
			}
			c := 0
			if spec, _, ok := reg.Lookup(tool); ok && spec.MaxInFlight > 0 {
				c = min(spec.MaxInFlight*(1+toolQueueRounds), member)
			}
			caps[tool] = c
			return c
		},
	}
}

// otherTenants is the label of the tenants past maxTenantLabels: not a
// valid tenant, so it never names one.
const otherTenants = "(other)"

// tenantLabels bounds the tenant label of the metrics: the first
// maxTenantLabels tenants seen keep their names, the rest share
// otherTenants. Producers that write to Kafka choose tenants, so an
// unbounded label would let one of them grow every scrape without end.
// Safe for concurrent use.
type tenantLabels struct {
	mu struct {
		sync.Mutex
		seen map[string]bool
	}
}

func newTenantLabels() *tenantLabels {
	l := &tenantLabels{}
	l.mu.seen = map[string]bool{}
	return l
}

// of is tenant's label.
func (l *tenantLabels) of(tenant string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.seen[tenant] {
		return tenant
	}
	if len(l.mu.seen) >= maxTenantLabels {
		return otherTenants
	}
	l.mu.seen[tenant] = true
	return tenant
}

// countAdmissions counts, once a tick committed, the calls it started and
// the intents it refused, per tenant.
func (e *Executor) countAdmissions(rd *partition.Decisions) {
	for i := range rd.Calls {
		e.m.TenantAdmitted.WithLabelValues(e.tenants.of(rd.Calls[i].Tenant)).Inc()
	}
	for _, r := range rd.Refused {
		e.m.TenantRefused.WithLabelValues(e.tenants.of(r.Tenant), r.Limit).Inc()
	}
}

// queueWaited observes how long a call waited in its tool's queue
// (dispatcher.waited): called under dispatcher.mu, it takes only the
// labels' own lock.
func (e *Executor) queueWaited(tenant string, d time.Duration) {
	e.m.TenantQueueWait.WithLabelValues(e.tenants.of(tenant)).Observe(d.Seconds())
}
