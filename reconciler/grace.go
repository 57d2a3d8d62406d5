package reconciler

import "time"

// The grace before an escalation: no key is escalated to a person while a
// member may hold its answer.
//
// A member that made a call and could not record its outcome (its
// partition moved, its transactions were fenced, the cluster could not
// take writes) keeps the outcome, or the certainty that it never sent the
// call, and delivers it to the key's owner as a resolve by call id and
// downstream key (executor/facts.go, saga/fact.go). The reconciler cannot
// see facts on their way: they sit on a member's disk until the broker
// takes them, then on the control topic until the owner decides them. So
// it escalates a subject only once its view has folded the log as it
// stood FactGrace after the later of the subject's deadline and the end
// of the last outage it saw (a failed lag measurement). FactGrace covers
// what a fact takes to land once the cluster takes writes again: the
// recovery of the partitions (docs/DESIGN.md, "Recovery after a quorum
// loss") and the member's delivery backoff.
//
// Rejected: the executor publishing the facts it holds (a topic, a
// metric) for the reconciler to read. A member that can publish can
// deliver, and one that cannot is exactly the case in question; the grace
// covers both the same way. What no grace covers is a member cut off alone
// for longer (a network partition of its own, a member down with facts on
// its disk): the key is escalated, and the fact settles it when it comes,
// which the operator sees as the key leaving the list.

// escalateAfter is the earliest moment (unix ms) a subject whose deadline
// is deadline may be escalated: grace after the later of the deadline and
// the end of the last outage. Pure.
func escalateAfter(deadline, quietSince int64, grace time.Duration) int64 {
	return max(deadline, quietSince) + grace.Milliseconds()
}

// mayEscalate reports whether subj may be escalated now: past
// escalateAfter, and the partition's view fresh since then (it folded
// every fact applied before that moment).
func (r *Reconciler) mayEscalate(now int64, p int32, subj Subject) bool {
	at := escalateAfter(subj.Deadline, r.quietSince, r.cfg.FactGrace)
	o, ok := r.owned[p]
	return ok && now >= at && o.freshSince(at)
}

// noteMeasured records how the last lag measurement went: a failure is an
// outage, and the first success after one ends it.
func (r *Reconciler) noteMeasured(ok bool) {
	switch {
	case !ok:
		r.outage = true
	case r.outage:
		r.outage, r.quietSince = false, r.now()
		r.cfg.Logger.Info("reconciler: the cluster answers again; escalations wait for the members' facts", "grace", r.cfg.FactGrace)
	}
}
