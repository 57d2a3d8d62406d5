package executor

import (
	"context"
	"sync/atomic"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/internal/handoff"
	"github.com/atmostonce/toolexec/topics"
)

// Every group callback, and how its news reaches the loop.

// ownershipChanges carries assignments and revocations from the group's
// callbacks to the loop, in a handoff queue (why a queue: package
// handoff); the loop applies the changes after its next poll. The loop
// holds the rebalance gate (gate.go) and lets a rebalance through
// only after a drain or while quiet, so no callback runs under a tick and
// a tick always sees one stable assignment.
type ownershipChanges struct {
	names topics.Names
	// cancel takes the jobs of revoked partitions that have not started
	// out of the dispatcher (dispatcher.cancelPartitions).
	cancel func(ps []int32) []job
	hooks  Hooks
	dirty  atomic.Bool // a callback ran: reset the session before the next transaction
	queue  handoff.Queue[ownershipChange]
}

type ownershipChange struct {
	assigned   bool
	partitions []int32
	byTopic    map[string][]int32 // as the group gave them (layout.go checks them)
	// cancelled are the revoked partitions' calls that had not started,
	// taken out of the dispatcher by the callback itself: the loop applies
	// the revocation only after its next poll, and the new owner may start
	// before that, so a queued call of a revoked partition must not be
	// able to start in between.
	cancelled []job
}

func (c *ownershipChanges) push(assigned bool, parts map[string][]int32) []int32 {
	ps := partitionsOf(parts)
	ch := ownershipChange{assigned: assigned, partitions: ps, byTopic: parts}
	if !assigned && c.cancel != nil {
		ch.cancelled = c.cancel(ps)
	}
	c.queue.Push(ch)
	return ps
}

// partitionsOf lists the partitions of parts once each.
func partitionsOf(parts map[string][]int32) []int32 {
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
	return ps
}

// notStarted queues jobs the dispatcher refused (their partition was
// released) for the loop, which records them after it applied the
// revocation queued before them, as it does the jobs a revocation
// cancelled.
func (c *ownershipChanges) notStarted(jobs []job) {
	if len(jobs) == 0 {
		return
	}
	c.queue.Push(ownershipChange{cancelled: jobs})
}

func (c *ownershipChanges) take() []ownershipChange { return c.queue.Take() }

// The group's callbacks: each queues the change for the loop, marks the
// session dirty, and then tells Hooks.Ownership.
func (c *ownershipChanges) onAssigned(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	ps := c.push(true, c.ours(parts))
	c.dirty.Store(true)
	c.hooks.ownership(true, ps)
}

func (c *ownershipChanges) onRevoked(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	ps := c.push(false, c.ours(parts))
	c.dirty.Store(true)
	c.hooks.ownership(false, ps)
}

func (c *ownershipChanges) onLost(_ context.Context, _ *kgo.Client, parts map[string][]int32) {
	ps := c.push(false, c.ours(parts))
	c.dirty.Store(true)
	c.hooks.ownership(false, ps)
}

// ours keeps the intents and control partitions of parts.
func (c *ownershipChanges) ours(parts map[string][]int32) map[string][]int32 {
	out := map[string][]int32{}
	for t, ps := range parts {
		if t == c.names.Intents || t == c.names.Control {
			out[t] = ps
		}
	}
	return out
}
