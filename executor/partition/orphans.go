package partition

import (
	"slices"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// Orphans: keys whose call no member runs.
//
// A restore gives the owner the log's truth about a partition, and the
// calls this member runs for it are those it marked in flight. Any other
// key of the partition whose call (or compensation) is started has no
// call running for this owner: the member that started it lost the
// partition (its outcome, if definite, comes as a fact), stopped, or never
// sent it. The key is in doubt. The intents that arrive from now on are
// told so; the intent that started the call and the duplicates that
// joined it would hear nothing until the key is settled, which for an
// irreversible tool waits for an operator. So after every restore the
// owner walks the partition's keys in doubt, a bounded step per tick
// (OrphanStep), and records each such key unknown (saga.Orphaned), which
// answers every waiter pending once.
//
// The walk starts again after each restore (an unknown transaction end, a
// failed view write and a new assignment all restore); a key already
// unknown is passed over. A tick that does not commit puts the walk back
// where it was (Aborted), so no step is lost with the tick's events.

// orphanWalk is where a partition's walk of its keys in doubt stands: after
// (afterT, afterK) in the doubt index's order.
type orphanWalk struct{ afterT, afterK string }

// orphans takes one step of the walks, OrphanStep keys in all, partitions
// in order.
func (s *stepper) orphans() error {
	budget := OrphanStep
	for _, p := range s.walking() {
		pt := s.c.parts[p]
		if s.rd.walks == nil {
			s.rd.walks = map[int32]orphanWalk{}
		}
		if _, noted := s.rd.walks[p]; !noted {
			s.rd.walks[p] = *pt.orphans
		}
		keys, err := s.c.view.InDoubtAfter(p, pt.orphans.afterT, pt.orphans.afterK, budget)
		if err != nil {
			return s.fatal(err)
		}
		for _, k := range keys {
			if err := s.orphan(p, k[0], k[1]); err != nil {
				return err
			}
			pt.orphans.afterT, pt.orphans.afterK = k[0], k[1]
		}
		if len(keys) < budget {
			pt.orphans = nil // walked to the end
		}
		if budget -= len(keys); budget == 0 {
			return nil
		}
	}
	return nil
}

// walking lists the restored partitions with a walk to go, in order.
func (s *stepper) walking() []int32 {
	var out []int32
	for p, pt := range s.c.parts {
		if pt.restored && pt.orphans != nil {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// orphan records one key of p unknown if its call is started and runs
// nowhere here (neither in flight nor recorded by this tick). The stored
// record is looked at first, so that the keys passed over (most of them)
// take no place in the tick's overlay: at this point of the step the
// overlay holds only the keys of this tick's completions, which are in
// flight.
func (s *stepper) orphan(p int32, tenant, key string) error {
	rk := wire.RoutingKey(tenant, key)
	env := s.c.env(s.nowMs, rk, s.done)
	if env.InFlight || s.done[rk] {
		return nil
	}
	stored, err := s.c.view.Get(tenant, key)
	if err != nil {
		return s.fatal(err)
	}
	if stored == nil || (stored.Status != saga.StatusStarted && stored.Status != saga.StatusCompensating) {
		return nil
	}
	en, err := s.load(p, tenant, key)
	if err != nil {
		return err
	}
	d := saga.Orphaned(en.Cur, env)
	if d.Verdict == saga.VerdictStale {
		return nil
	}
	s.c.cfg.Logger.Info("no call runs for a started key: recorded unknown, its waiters told pending", "key", rk, "partition", p)
	s.emit(p, en, d, en.Cur.Origin.Traceparent)
	return nil
}

// resumeWalks puts back the walks a tick that did not commit moved on.
func (c *Core) resumeWalks(rd *Decisions) {
	for p, w := range rd.walks {
		if pt, ok := c.parts[p]; ok {
			pt.orphans = &w
		}
	}
}
