package reconciler

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/wire"
)

// walkPage is how many index entries one read of the doubt index returns.
// The walk goes on page by page; the page only bounds one Pebble iterator
// and the memory of one read, not the scan.
const walkPage = 512

// doubtPos is a position in a partition's doubt index: the walk resumes
// after it. The zero value is "before the first key".
type doubtPos struct{ tenant, key string }

func (d doubtPos) zero() bool { return d.tenant == "" }

// compare orders positions as the index does: tenant, then key (tenants
// hold no 0x00, the separator, so comparing the pair is comparing the
// index keys).
func (d doubtPos) compare(o doubtPos) int {
	return cmp.Or(strings.Compare(d.tenant, o.tenant), strings.Compare(d.key, o.key))
}

// escalatedKey is a subject this member found escalated, kept so that
// later scans can count and list it without reading its record and its
// investigation again. The fold forgets it as soon as an event of its key
// arrives (forget).
type escalatedKey struct {
	subj Subject
	inv  Investigation
}

// scan examines the keys in doubt of every owned partition whose view has
// caught up, plans a step for each one past its deadline (Plan) and
// carries it out, then publishes the gauges and the rows of /pending.
//
// Why only caught-up partitions: a view that lags the log could take a key
// that settled long ago for one in doubt. Commands carry their call id as
// a precondition, so a stale decision is refused by the executor anyway;
// waiting spares it the noise (and a native_key tool a needless retry).
func (r *Reconciler) scan(ctx context.Context) error {
	now := r.now()
	g, ag := newGauges(), newApprovalGauges()
	var rows []Row
	var approvals []ApprovalRow
	var covered []int32
	for _, p := range r.ownedPartitions() {
		if !r.owned[p].caughtUp {
			continue
		}
		covered = append(covered, p)
		if err := r.scanPartition(ctx, now, p, g, &rows); err != nil {
			return err
		}
		if err := r.scanApprovals(now, p, ag, &approvals); err != nil {
			return err
		}
	}
	r.m.publish(g)
	r.m.approvals.publish(ag)
	sortApprovals(approvals)
	r.mu.Lock()
	r.mu.rows, r.mu.started, r.mu.owned, r.mu.approvals = rows, g.started, covered, approvals
	r.mu.Unlock()
	return nil
}

// scanPartition walks p's doubt index once around, starting after where
// the last scan stopped, and examines at most MaxScan keys.
//
// Why a cursor: escalated keys stay in the index, so a scan of the first
// MaxScan keys every time would, once MaxScan of them had piled up (or one
// tenant, whose keys sort first, had that many in doubt), never plan a
// later key. So each scan examines the next MaxScan keys after the last
// one it examined, wrapping around, so every key is examined within (keys / MaxScan) scans.
// Escalated keys wait for an operator and need no plan: once examined,
// they are remembered (partition.escalated) and only counted and listed,
// outside the MaxScan budget, until an event of their key arrives.
//
// Past MaxScan the gauges and /pending cover the keys examined in this
// scan and every escalated key; a warning says so, once per partition.
func (r *Reconciler) scanPartition(ctx context.Context, now int64, p int32, g *gauges, rows *[]Row) error {
	o := r.owned[p]
	examined, full := 0, false
	err := r.walkDoubt(p, o.cursor, func(d state.Doubt) (bool, error) {
		rk := wire.RoutingKey(d.Tenant, d.Key)
		if e, ok := o.escalated[rk]; ok {
			g.add(now, e.subj, true)
			*rows = append(*rows, rowOf(now, e.subj, &e.inv))
			return true, nil
		}
		if examined == r.cfg.MaxScan {
			full = true
			return true, nil // walk on: the escalated keys are still counted
		}
		examined++
		o.cursor = doubtPos{tenant: d.Tenant, key: d.Key}
		rec, err := r.store.Get(d.Tenant, d.Key)
		if err != nil {
			return false, fmt.Errorf("%w: %w", ErrFatal, err)
		}
		return true, r.examine(ctx, now, p, rec, g, rows)
	})
	if full && !r.warned[p] {
		r.warned[p] = true
		r.cfg.Logger.Warn("reconciler: more keys in doubt than max_scan; each scan examines the next max_scan of them",
			"partition", p, "max_scan", r.cfg.MaxScan)
	}
	return err
}

// walkDoubt calls fn for every key of p's doubt index once, in index
// order, starting after start and wrapping around to it (start itself
// last), until fn returns false or an error.
func (r *Reconciler) walkDoubt(p int32, start doubtPos, fn func(state.Doubt) (bool, error)) error {
	pos, wrapped := start, start.zero()
	for {
		page, err := r.store.InDoubtAfter(p, pos.tenant, pos.key, walkPage)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrFatal, err)
		}
		for _, d := range page {
			at := doubtPos{tenant: d.Tenant, key: d.Key}
			if wrapped && !start.zero() && at.compare(start) > 0 {
				return nil // around once
			}
			if more, err := fn(d); err != nil || !more {
				return err
			}
			pos = at
		}
		if len(page) == walkPage {
			continue
		}
		if wrapped {
			return nil
		}
		wrapped, pos = true, doubtPos{}
	}
}

// rememberEscalated keeps an escalated subject for later scans.
func (o *partition) rememberEscalated(rk string, subj Subject, inv Investigation) {
	if o.escalated == nil {
		o.escalated = map[string]escalatedKey{}
	}
	o.escalated[rk] = escalatedKey{subj: subj, inv: inv}
}

// forget drops what scans remember of the keys an event touched: their
// next scan examines them again.
func (o *partition) forget(rks []string) {
	for _, rk := range rks {
		delete(o.escalated, rk)
	}
}
