package partition

import (
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// What the core knows of restores. The caller restores (eventlog); the
// core says when a partition needs it, and what follows from the result.
//
// A partition is restored before the first decision that reads it in an
// assignment (Step returns it in Decisions.Restore), after a transaction end
// whose outcome is unknown (Aborted), after a view write that failed
// (Committed), when it has been idle since its assignment (IdleRestore:
// its previous owner's reads must be answered), and, while its log has a
// gap, every GapRetry (GapRetry).

// gap is a partition whose log lost events the view needs: it is not
// decided until a restore succeeds (eventlog/gap.go).
type gap struct {
	err     error
	lastTry time.Time
}

// ErrGapWait is wrapped by GapWait's error.
var ErrGapWait = fmt.Errorf("partition: the log has a gap")

// Restored reports that p's view is caught up with the log. It ends a
// gap (gapEnded: resume its fetches), recounts the keys in doubt, and
// takes on the reads a previous owner left, once per assignment: the
// returned calls are marked in flight and are to be dispatched at once
// (their read_started events are committed already).
func (c *Core) Restored(p int32) (resumed []Call, gapEnded bool) {
	pt, ok := c.parts[p]
	if !ok {
		return nil, false
	}
	gapEnded = pt.gap != nil
	pt.gap, pt.restored, pt.orphans = nil, true, &orphanWalk{}
	if n, err := c.view.CountInDoubt(p); err == nil {
		pt.unsettled = n
	}
	return c.resumeReads(p, pt), gapEnded
}

// resumeReads returns the pending reads of p that no call of this member
// serves, once per assignment (or catch-up).
func (c *Core) resumeReads(p int32, pt *part) []Call {
	if pt.readsResumed {
		return nil
	}
	pt.readsResumed = true
	evs, err := c.view.PendingReads(p, ResumeReadsLimit)
	if err != nil {
		c.cfg.Logger.Error("pending reads unreadable; they wait for the next restore", "partition", p, "err", err)
		pt.readsResumed = false
		return nil
	}
	var calls []Call
	for _, ev := range evs {
		rk := wire.RoutingKey(ev.Tenant, ev.Key)
		if c.calls.readInFlight(rk, ev.IntentID) {
			continue
		}
		call := Call{Call: *saga.ReadCall(*ev, ""), P: p, Epoch: pt.epoch, RK: rk}
		c.calls.start(call, false)
		c.occ.hold(call, 0)
		calls = append(calls, call)
	}
	return calls
}

// Gapped reports that p's restore found a gap the log cannot bridge. It
// returns true when the gap is new: pause the partition's fetches.
func (c *Core) Gapped(now time.Time, p int32, err error) (isNew bool) {
	pt, ok := c.parts[p]
	if !ok {
		return false
	}
	if pt.gap != nil {
		pt.gap.err, pt.gap.lastTry = err, now
		return false
	}
	pt.gap = &gap{err: err, lastTry: now}
	return true
}

// GapWait returns an error (wrapping ErrGapWait and the gap) while p has
// a gap that was tried less than GapRetry ago: its records, polled before
// the pause took, wait.
func (c *Core) GapWait(now time.Time, p int32) error {
	pt, ok := c.parts[p]
	if !ok || pt.gap == nil || now.Sub(pt.gap.lastTry) >= GapRetry {
		return nil
	}
	return fmt.Errorf("%w: partition %d: %w", ErrGapWait, p, pt.gap.err)
}

// Gaps is the number of held partitions with a gap.
func (c *Core) Gaps() int {
	n := 0
	for _, pt := range c.parts {
		if pt.gap != nil {
			n++
		}
	}
	return n
}

// GapRetry names one gapped partition whose restore is due again, at most
// every GapRetry, and notes the try. The caller restores it (bounded)
// without waiting on the gap.
func (c *Core) GapRetry(now time.Time) (int32, bool) {
	for p, pt := range c.parts {
		if pt.gap == nil || now.Sub(pt.gap.lastTry) < GapRetry {
			continue
		}
		pt.gap.lastTry = now
		return p, true
	}
	return 0, false
}

// IdleRestore names one held partition that no record has made the
// member restore since its assignment, IdleRestoreAfter after it and
// after the last attempt, and notes the attempt. Its restore is bounded
// and never fails the tick: a restore that cannot settle is tried later.
func (c *Core) IdleRestore(now time.Time) (int32, bool) {
	for p, pt := range c.parts {
		if pt.restored || pt.gap != nil || now.Sub(pt.since) < IdleRestoreAfter || now.Sub(pt.lastTry) < IdleRestoreAfter {
			continue
		}
		pt.lastTry = now
		return p, true
	}
	return 0, false
}

// catchUp marks partitions whose view may lag what the log holds: they
// are restored before their next use, and their pending reads are taken
// on again (a lost answer to a commit that did go through leaves
// read_started events in the log whose calls this member has just
// forgotten, and whose intents' offsets are committed, so no redelivery
// brings them back).
func (c *Core) catchUp(ps map[int32]bool) {
	for p := range ps {
		if pt, ok := c.parts[p]; ok {
			pt.restored, pt.readsResumed = false, false
		}
	}
}

// readIDOf names the pending read ev on p.
func readIDOf(p int32, ev *saga.Event) overlay.ReadID { return overlay.ReadIDOf(p, ev) }
