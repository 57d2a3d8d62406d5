package executor

import (
	"context"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Every group callback, and how its news reaches the loop.

// ownershipChanges carries assignments and revocations from the group's
// callbacks to the loop.
//
// Why not let the callbacks touch the loop's maps under a mutex: the
// transact session calls our revoke callback while holding its own lock,
// the one End needs. A callback that waited for the loop (which may sit
// in End) would deadlock. So callbacks only append here, under a lock never
// held across I/O, and the loop applies the changes after its next poll.
// BlockRebalanceOnPoll guarantees no callback runs between a poll and
// AllowRebalance, so a tick always sees one stable assignment.
type ownershipChanges struct {
	mu struct {
		sync.Mutex
		list []ownershipChange
	}
}

type ownershipChange struct {
	assigned   bool
	partitions []int32
	byTopic    map[string][]int32 // as the group gave them (layout.go checks them)
}

func (c *ownershipChanges) push(assigned bool, parts map[string][]int32) {
	seen := map[int32]bool{}
	var ps []int32
	for _, list := range parts {
		for _, p := range list {
			if !seen[p] {
				seen[p] = true
				ps = append(ps, p)
			}
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.list = append(c.mu.list, ownershipChange{assigned: assigned, partitions: ps, byTopic: parts})
}

func (c *ownershipChanges) take() []ownershipChange {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.mu.list
	c.mu.list = nil
	return l
}

func (e *Executor) onAssigned(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	e.changes.push(true, e.ours(parts))
	e.dirty.Store(true)
}

func (e *Executor) onRevoked(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	e.changes.push(false, e.ours(parts))
	e.dirty.Store(true)
}

func (e *Executor) onLost(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	e.changes.push(false, e.ours(parts))
	e.dirty.Store(true)
}

func (e *Executor) ours(parts map[string][]int32) map[string][]int32 {
	out := map[string][]int32{}
	for t, ps := range parts {
		if t == e.cfg.Names.Intents || t == e.cfg.Names.Control {
			out[t] = ps
		}
	}
	return out
}

// onCallbackBlocked runs when the group wants to revoke, assign or mark
// partitions lost while our poll blocks it: drain at the end of the tick,
// and stop waiting in a transaction end that cannot finish first.
func (e *Executor) onCallbackBlocked(context.Context, *kgo.Client) {
	e.rebalancePending.Store(true)
	e.wake()
	e.endMu.Lock()
	defer e.endMu.Unlock()
	if e.endCancel != nil {
		e.endCancel()
	}
}

// applyOwnershipChanges runs on the loop goroutine after each poll. A new
// assignment gets a new epoch and must restore before its first decision
// (the core's). A revocation forgets the partition's calls: if any still
// run, their outcomes are stale and the keys are in doubt for the next
// owner.
func (e *Executor) applyOwnershipChanges() {
	for _, ch := range e.changes.take() {
		if ch.assigned {
			e.checkAssignment(ch.byTopic)
			e.core.Assign(e.cfg.Now(), ch.partitions...)
			e.assigned = true
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
		e.sess.Client().ResumeFetchPartitions(e.coPartitions(p))
	}
	for _, rk := range rel.Lost {
		e.m.OutcomesLost.Inc()
		e.cfg.Logger.Warn("partition released with a call running; its key is in doubt for the next owner", "key", rk, "partition", p)
	}
	e.m.KeysInDoubt.DeleteLabelValues(partitionLabel(p))
}

func partitionLabel(p int32) string { return strconv.Itoa(int(p)) }

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
