package partition

import (
	"time"

	"github.com/atmostonce/toolexec/internal/invariants"
)

// part is this member's hold on one partition.
type part struct {
	epoch uint64 // bumped at every assignment; completions of older epochs are stale
	// restored: the view is caught up with the log for this assignment.
	restored bool
	since    time.Time
	// readsResumed: the reads a previous owner left were taken on.
	readsResumed bool
	lastTry      time.Time   // the last idle restore attempt
	gap          *gap        // the log lost events the view needs (restore.go)
	unsettled    int         // keys in doubt in the view, once restored
	orphans      *orphanWalk // the walk of the keys in doubt after a restore; nil when done (orphans.go)
}

// Assign takes partitions on. A partition new to this member gets a new
// epoch and must be restored before its first decision; one already held
// is unchanged.
func (c *Core) Assign(now time.Time, ps ...int32) {
	for _, p := range ps {
		if _, ok := c.parts[p]; ok {
			continue
		}
		c.epochSeq++
		c.parts[p] = &part{epoch: c.epochSeq, since: now}
	}
}

// Released is what a revocation left behind.
type Released struct {
	// Lost are the routing keys whose calls were still running: their
	// outcomes will be dropped, and the keys are in doubt for the next
	// owner.
	Lost []string
	// Gapped: the partition had a gap; its fetches may resume.
	Gapped bool
}

// Revoke gives a partition up: its calls in flight are forgotten (a read
// is called again by the next owner), its gap ends.
func (c *Core) Revoke(p int32) Released {
	pt, ok := c.parts[p]
	delete(c.parts, p)
	c.occ.freePartition(p)
	return Released{Lost: c.calls.release(p), Gapped: ok && pt.gap != nil}
}

// Owns reports whether p is held.
func (c *Core) Owns(p int32) bool {
	_, ok := c.parts[p]
	return ok
}

// AllRestored reports whether every held partition's view is caught up
// with its log for this assignment (true when none is held).
func (c *Core) AllRestored() bool {
	for _, pt := range c.parts {
		if !pt.restored {
			return false
		}
	}
	return true
}

// Owned lists the held partitions, in no order.
func (c *Core) Owned() []int32 {
	out := make([]int32, 0, len(c.parts))
	for p := range c.parts {
		out = append(out, p)
	}
	return out
}

// KeysInDoubt is the number of keys of p in doubt with no call running
// here: what the reconciler will have to settle.
//
// Every key in flight is in doubt in the view, but for one case: a
// transaction end of unknown outcome that did commit a call's outcome,
// once the partition caught up from the log. Its completion waits,
// unrecorded, for the next step (which finds it stale and unmarks the
// call), so until then the count is low by at most those calls.
func (c *Core) KeysInDoubt(p int32) int {
	pt, ok := c.parts[p]
	if !ok {
		return 0
	}
	n := pt.unsettled - c.calls.onPartition(p)
	invariants.Check(n >= 0 || !pt.restored || c.unrecordedOn(p),
		"doubt count of partition %d is %d: %d unsettled, %d in flight", p, n, pt.unsettled, c.calls.onPartition(p))
	return max(n, 0)
}

// unrecordedOn reports whether a completion of p waits to be recorded.
func (c *Core) unrecordedOn(p int32) bool {
	for _, cm := range c.unrecorded {
		if cm.Call.P == p {
			return true
		}
	}
	return false
}
