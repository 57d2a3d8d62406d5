package executor

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
			continue
		}
		for _, p := range ch.partitions {
			e.release(p)
		}
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
		e.m.OutcomesLost.Inc()
		e.cfg.Logger.Warn("partition released with a call running; its key is in doubt for the next owner", "key", rk, "partition", p)
	}
	e.m.KeysInDoubt.DeleteLabelValues(partitionLabel(p))
}
