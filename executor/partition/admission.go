package partition

import (
	"fmt"
	"math"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/invariants"
	"github.com/atmostonce/toolexec/saga"
)

// Admission: how many calls this member takes on, and each tenant's share.
//
// A call holds its place from the Step that starts it until its
// completion reaches a Step (running, waiting in the dispatcher's queue,
// or finished and not collected yet), or until it is forgotten unstarted
// (an aborted tick) or its partition is revoked. Reads a previous owner
// left hold places too, though they are never refused: their intents'
// offsets are committed already.
//
// A call that would start is refused (saga.Refusal: answered not_executed
// at once, nothing logged, the key free) when its tool, or the member,
// holds all it may (queue_full), or when its tenant holds its share
// (over_share). The share is the dynamic threshold of shared-buffer
// switches (Choudhury and Hahne): a tenant may hold fewer calls than
// ShareFactor times the places still free. So a tenant alone may fill
// ShareFactor/(ShareFactor+1) of the places, n tenants that all flood
// hold ShareFactor/(n*ShareFactor+1) each, and a tenant that comes later
// always finds places free, without a list of tenants, weights or any
// state beyond the counts. Places free up as calls complete: the queue
// is bounded, and no intent waits on it without bound.
//
// Why refuse and not pause the partition whose next intent needs a full
// tool: keys of every tenant share every partition, so a paused
// partition holds the other tenants' intents behind the one that waits
// (docs/DESIGN.md, "Back-pressure").

// Admission sets the places of a member (Config.Admission). The zero
// value admits every call.
type Admission struct {
	// ToolCap is the calls of a tool this member may hold at once, running
	// and waiting; 0 or less: no bound of the tool's own.
	ToolCap func(tool string) int
	// MemberCap bounds the calls of every tool together; 0: none.
	MemberCap int
}

// Limits of the admission, as the metrics name them.
const (
	LimitToolShare   = "tool_share"
	LimitMemberShare = "member_share"
	LimitToolFull    = "tool_full"
	LimitMemberFull  = "member_full"
)

// Refused is one intent the core refused for want of a place.
type Refused struct {
	Tenant, Tool string
	Limit        string // Limit*
}

// place is one call holding a place: the key of occupancy.calls is its
// routing key and call id.
type place struct {
	p      int32
	epoch  uint64
	tool   string
	tenant string
	at     int64 // unix ms of the Step that started it; 0: unknown (a resumed read)
}

// load counts the places held in one pool (a tool, or the member).
type load struct {
	total    int
	byTenant map[string]int
}

func (l *load) add(tenant string, n int) {
	l.total += n
	if l.byTenant == nil {
		l.byTenant = map[string]int{}
	}
	if v := l.byTenant[tenant] + n; v > 0 {
		l.byTenant[tenant] = v
	} else {
		invariants.Check(v == 0, "admission: tenant %s holds %d places", tenant, v)
		delete(l.byTenant, tenant)
	}
	invariants.Check(l.total >= 0, "admission: %d places held", l.total)
}

// occupancy is the places held, by tool and tenant, and how long calls
// hold them.
type occupancy struct {
	cfg    Admission
	calls  map[string]place // readID(rk, callID)
	tools  map[string]*load
	member load
	// heldMs is, per tool, a moving average of how long a call held its
	// place: the retry hint of a refusal.
	heldMs map[string]float64
	// refused collects the refusals of the current Step (Decisions.Refused).
	refused []Refused
}

func newOccupancy(cfg Admission) *occupancy {
	return &occupancy{cfg: cfg, calls: map[string]place{}, tools: map[string]*load{}, heldMs: map[string]float64{}}
}

// hold gives c a place, at (unix ms) when its Step started it.
func (o *occupancy) hold(c Call, at int64) {
	id := readID(c.RK, c.CallID)
	if _, ok := o.calls[id]; ok {
		return
	}
	pl := place{p: c.P, epoch: c.Epoch, tool: c.Tool, tenant: c.Tenant, at: at}
	o.calls[id] = pl
	o.count(pl, 1)
}

// free releases c's place, if it still holds one; now (unix ms, 0 when
// unknown) measures how long it was held. Safe to call more than once.
func (o *occupancy) free(c Call, now int64) {
	id := readID(c.RK, c.CallID)
	pl, ok := o.calls[id]
	if !ok || pl.epoch != c.Epoch {
		return
	}
	delete(o.calls, id)
	o.count(pl, -1)
	if now > 0 && pl.at > 0 && now >= pl.at {
		o.observe(pl.tool, float64(now-pl.at))
	}
}

// freePartition releases every place of partition p (revoked).
func (o *occupancy) freePartition(p int32) {
	for id, pl := range o.calls {
		if pl.p == p {
			delete(o.calls, id)
			o.count(pl, -1)
		}
	}
}

func (o *occupancy) count(pl place, n int) {
	l := o.tools[pl.tool]
	if l == nil {
		l = &load{}
		o.tools[pl.tool] = l
	}
	l.add(pl.tenant, n)
	if l.total == 0 {
		delete(o.tools, pl.tool)
	}
	o.member.add(pl.tenant, n)
}

// observe folds one holding time into the tool's average (the last
// eight calls weigh most).
func (o *occupancy) observe(tool string, ms float64) {
	if prev, ok := o.heldMs[tool]; ok {
		ms = prev + (ms-prev)/8
	}
	o.heldMs[tool] = ms
}

// admit is saga.Env.Admit: nil when tenant may start a call of tool now,
// else the refusal (also kept for Decisions.Refused).
func (o *occupancy) admit(tenant, tool string) *saga.Refusal {
	limit, msg := o.check(tenant, tool)
	if limit == "" {
		return nil
	}
	o.refused = append(o.refused, Refused{Tenant: tenant, Tool: tool, Limit: limit})
	code := codes.ErrOverShare
	if limit == LimitToolFull || limit == LimitMemberFull {
		code = codes.ErrQueueFull
	}
	return &saga.Refusal{Code: code, Message: msg + "; nothing was called or recorded: send the key again after retry_after_ms",
		RetryAfterMs: o.retryAfter(tool)}
}

// check names the limit a call of tool for tenant would pass, or "".
func (o *occupancy) check(tenant, tool string) (limit, msg string) {
	if c := o.toolCap(tool); c > 0 {
		tl := o.tools[tool]
		if tl == nil {
			tl = &load{}
		}
		if limit, msg = share(tl, c, tenant, "tool "+tool, LimitToolFull, LimitToolShare); limit != "" {
			return limit, msg
		}
	}
	if c := o.cfg.MemberCap; c > 0 {
		return share(&o.member, c, tenant, "this executor", LimitMemberFull, LimitMemberShare)
	}
	return "", ""
}

func (o *occupancy) toolCap(tool string) int {
	if o.cfg.ToolCap == nil {
		return 0
	}
	return o.cfg.ToolCap(tool)
}

// share applies the dynamic threshold to one pool of capacity places:
// the limit full when none is free, over when tenant holds ShareFactor
// times the free ones or more, else "".
func share(l *load, capacity int, tenant, what, full, over string) (limit, msg string) {
	free := capacity - l.total
	if free <= 0 {
		return full, fmt.Sprintf("%s holds all the %d calls it may", what, capacity)
	}
	if held := l.byTenant[tenant]; held >= ShareFactor*free {
		return over, fmt.Sprintf("tenant %s holds %d of the %d calls %s may hold: its share while %d are held", tenant, held, capacity, what, l.total)
	}
	return "", ""
}

// retryAfter is the hint of a refusal for tool: about how long its calls
// hold their places (by then as many places have freed as were held),
// within [MinRetryAfter, MaxRetryAfter]; DefaultRetryAfter before any
// call of the tool completed.
func (o *occupancy) retryAfter(tool string) int64 {
	ms, ok := o.heldMs[tool]
	if !ok {
		return DefaultRetryAfter.Milliseconds()
	}
	return min(max(int64(math.Ceil(ms)), MinRetryAfter.Milliseconds()), MaxRetryAfter.Milliseconds())
}

// takeRefused returns the refusals since the last call, and forgets them.
func (o *occupancy) takeRefused() []Refused {
	r := o.refused
	o.refused = nil
	return r
}

// Held is the number of places held by tenant at tool ("" for every
// tool): for tests and the metrics.
func (c *Core) Held(tool, tenant string) int {
	if tool == "" {
		return c.occ.member.byTenant[tenant]
	}
	if l := c.occ.tools[tool]; l != nil {
		return l.byTenant[tenant]
	}
	return 0
}
