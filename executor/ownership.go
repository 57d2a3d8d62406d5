package executor

import (
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/tools"
)

// The loop applies what the group's callbacks queued (callbacks.go).

// applyOwnershipChanges runs on the loop goroutine after each poll. A new
// assignment gets a new epoch and must restore before its first decision
// (the core's). A revocation forgets the partition's calls: if any still
// run, their outcomes are stale and the keys are in doubt for the next
// owner.
func (e *Executor) applyOwnershipChanges() {
	for _, ch := range e.changes.take() {
		if ch.assigned {
			e.guard.checkAssignment(ch.byTopic)
			e.core.Assign(e.cfg.Now(), ch.partitions...)
			e.assigned = true
			e.restores.assigned(e.cfg.Now())
			continue
		}
		for _, p := range ch.partitions {
			e.release(p)
		}
		e.notStarted(ch.cancelled)
	}
}

func (e *Executor) release(p int32) {
	rel := e.core.Revoke(p)
	e.hot.forgetPartition(p)
	if rel.Gapped {
		e.gapChanged()
		e.client.ResumeFetchPartitions(coPartitions(e.cfg.Names, p))
	}
	for _, rk := range rel.Lost {
		e.cfg.Logger.Warn("partition released with a call running; its key is in doubt for the next owner until the call's outcome, kept as a fact, reaches it", "key", rk, "partition", p)
	}
	e.m.KeysInDoubt.DeleteLabelValues(partitionLabel(p))
}

// notStarted hands calls taken out of the dispatcher before they started
// to the core as not executed: they never reached their tool. A drain's
// are recorded in its next tick; a revocation's partitions are released
// by then, and the core gives their outcomes back as lost
// (releasedOutcomes).
func (e *Executor) notStarted(jobs []job) {
	for _, j := range jobs {
		e.finished(completion{job: j, outcome: tools.Outcome{Status: tools.NotExecuted, Code: codes.ErrDrained,
			Message: "the executor released the key before the call started"}})
	}
}

// releasedOutcomes is where an outcome of a partition this member no
// longer owns ends: a call that finished after its partition was released
// (or re-assigned), or one that never started. The member cannot write it
// to a partition it does not own, and its key's next owner finds the key
// in doubt; a definite outcome is kept as a fact and delivered to that
// owner (facts.go). An error means the fact could not be kept: fatal.
func (e *Executor) releasedOutcomes(lost []partition.Completion) error {
	e.m.OutcomesLost.Add(float64(len(lost)))
	return e.keepLost(lost)
}

// noteWarm marks the member warm, once and for good, at the end of the
// first iteration after an assignment in which every partition it holds
// is restored (the restores of partitions that records did not ask for
// come from IdleRestore, one per tick). Until then Ready is false, so a
// rolling update waits for a member that can decide at once, and a member
// that takes partitions over is not counted ready while it restores them.
// Why once: every rebalance makes the taken-over partitions unrestored
// for a moment; a readiness that followed each would take every member
// out of its Service at every rebalance.
func (e *Executor) noteWarm() {
	if !e.warm.Load() && e.assigned && e.core.AllRestored() {
		e.warm.Store(true)
	}
}
