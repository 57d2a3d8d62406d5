package executor

import "context"

// The loop's hold on the group's rebalance gate (kgo.BlockRebalanceOnPoll).
//
// franz-go holds a rebalance back only while a poll has returned (records,
// or the end of its wait) and AllowRebalance has not been called: during a
// poll's wait for records the gate is open, and a revocation runs its
// callback at once. An executor spends most of its idle time in that
// wait, with calls running and queued, so a revocation there would skip
// the drain: a running call's outcome would be dropped (the key left in
// doubt after a routine rebalance) and a queued call could reach its tool
// from a member that had released the partition.
//
// So the loop holds the gate at all times, its polls' waits included, and
// lets a rebalance through only where nothing can be lost:
//
//   - after a drain: a rebalance wanted the gate (onCallbackBlocked), and
//     the calls in flight were recorded or timed out;
//   - when the member is quiet: no call queued, running, finished and not
//     collected, or collected and not recorded, and no transaction open;
//     a rebalance that slips through then finds nothing to drain.
//
// The second is also what keeps franz-go's count of pollers bounded: each
// poll adds one and only AllowRebalance clears them (to zero). A member
// that is never quiet stops polling after maxHeldPolls polls until it is,
// and opens the gate then.
//
// Why the callbacks do not wait for a drain instead: the transact session
// calls the revoke callback holding the lock End needs, and franz-go calls
// it holding the gate that the loop's next poll waits on; a callback that
// waited for the loop would deadlock with it in either place.
type rebalanceGate struct {
	held  bool   // the loop holds the gate (loop goroutine only)
	polls uint32 // polls since the gate was last opened
}

// holdRebalances takes the gate if the loop does not hold it. A poll with
// a cancelled context returns at once, holding the gate, after any
// rebalance already let through has run its callbacks.
func (e *Executor) holdRebalances() {
	if e.gate.held {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.client.PollRecords(ctx, 1)
	e.gate.held, e.gate.polls = true, 0
}

// allowRebalances lets a waiting rebalance through. The loop takes the
// gate back at its next iteration, after the rebalance's callbacks.
func (e *Executor) allowRebalances() {
	e.client.AllowRebalance()
	e.gate.held = false
}

// quiet reports whether a rebalance let through now would lose nothing:
// no call owes an outcome or an answer.
func (e *Executor) quiet() bool { return !e.callsPending() }

// pollsOverdue reports whether the loop must stop polling until it is
// quiet and can open the gate (rebalanceGate).
func (e *Executor) pollsOverdue() bool { return e.gate.polls >= maxHeldPolls }
