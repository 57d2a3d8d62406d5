package executor

// Point names a moment of the protocol at which a test or the chaos
// harness may inject a fault (block, kill the process, ...).
type Point string

const (
	PointBeforeStartedCommit = Point("before_started_commit") // started events produced, transaction not ended
	PointAfterStartedCommit  = Point("after_started_commit")  // committed, call not dispatched
	PointDuringCall          = Point("during_call")           // in the call goroutine, before the tool runs
	PointAfterCall           = Point("after_call")            // the tool returned, outcome not yet handed to the loop
	PointDuringOutcomeCommit = Point("during_outcome_commit") // outcome events produced, transaction not ended
)

// Hooks are called at protocol points. A nil hook is skipped. Hooks run on
// the loop goroutine (or the call goroutine for call points) and may block
// to freeze the protocol there.
type Hooks struct {
	At func(p Point, routingKey string)
	// Ownership is told of every change of this member's partitions, on
	// the group's goroutine, as the last step of the callback that
	// learned of it: assigned, or released (revoked or lost). Once it
	// is told of a release the member no longer owns those partitions,
	// and a call it starts for one of them afterwards is a call from a
	// non-owner (the simulation checks that none is, harness/chaos/sim).
	Ownership func(assigned bool, partitions []int32)
}

func (h Hooks) at(p Point, rk string) {
	if h.At != nil {
		h.At(p, rk)
	}
}

func (h Hooks) ownership(assigned bool, partitions []int32) {
	if h.Ownership != nil && len(partitions) > 0 {
		h.Ownership(assigned, partitions)
	}
}
