package sim

import (
	"fmt"
	"sync"

	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/wire"
)

// owners checks that no member starts a call for a partition after it
// released that partition: the member's group callbacks tell its
// releases and assignments (executor.Hooks.Ownership), the loop tells
// each call whose started event just committed (PointAfterStartedCommit)
// and the call's goroutine tells its start, before the tool is reached
// (PointDuringCall). All three go through one mutex, so their order here
// is their order in time: a start recorded after a release began after
// that release was told, and the tool was reached after that.
//
// A call is judged against the tenure under which its started event
// committed: every assignment of a partition to a member opens a new
// tenure, and a release closes it. A call whose tenure is no longer open
// when it starts (released, or released and assigned again) is a call
// from a member that released its partition. Calls of one key at one
// member are matched by key (the latest commit): a read-only key may
// have two at once, and a mismatch there can only hide a violation,
// never invent one.
type owners struct {
	partitions int32
	mu         sync.Mutex
	next       uint64
	held       map[string]map[int32]uint64  // member -> partition -> open tenure
	committed  map[string]map[string]uint64 // member -> routing key -> tenure at its last started commit (0: not held)
	gone       map[string]bool              // members abandoned (Crash, or Close after Run ended on its own): their late starts reach no tool
	starts     int
	violations []string
}

func newOwners(partitions int32) *owners {
	return &owners{partitions: partitions, held: map[string]map[int32]uint64{}, committed: map[string]map[string]uint64{}, gone: map[string]bool{}}
}

// hooks are the executor hooks of one member life.
func (o *owners) hooks(member string) executor.Hooks {
	o.mu.Lock()
	o.held[member] = map[int32]uint64{}
	o.committed[member] = map[string]uint64{}
	o.mu.Unlock()
	return executor.Hooks{
		At:        func(p executor.Point, rk string) { o.at(member, p, rk) },
		Ownership: func(assigned bool, ps []int32) { o.ownership(member, assigned, ps) },
	}
}

func (o *owners) ownership(member string, assigned bool, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if assigned {
			o.next++
			o.held[member][p] = o.next
		} else {
			delete(o.held[member], p)
		}
	}
}

func (o *owners) at(member string, pt executor.Point, rk string) {
	switch pt {
	case executor.PointAfterStartedCommit, executor.PointDuringCall:
	default:
		return
	}
	p := wire.Partition(rk, o.partitions)
	o.mu.Lock()
	defer o.mu.Unlock()
	tenure := o.held[member][p]
	if pt == executor.PointAfterStartedCommit {
		o.committed[member][rk] = tenure
		return
	}
	if o.gone[member] {
		return // abandoned: the call's context is cancelled, nothing is sent
	}
	o.starts++
	at, ok := o.committed[member][rk]
	switch {
	case !ok:
		o.violations = append(o.violations, fmt.Sprintf("call_without_commit: %s started a call of %s (partition %d) whose started commit it never reported", member, rk, p))
	case at == 0:
		o.violations = append(o.violations, fmt.Sprintf("call_after_release: %s started a call of %s whose started event committed after it released partition %d", member, rk, p))
	case tenure != at:
		o.violations = append(o.violations, fmt.Sprintf("call_after_release: %s started a call of %s after it released partition %d (committed in tenure %d, now %d)", member, rk, p, at, tenure))
	}
}

// abandon marks a member's life over before it is crashed, or closed
// after its Run ended on its own: starts its dispatcher still runs reach
// no tool (Crash and Close cancel the calls' context before the client
// leaves the group and tells the release).
func (o *owners) abandon(member string) {
	o.mu.Lock()
	o.gone[member] = true
	o.mu.Unlock()
}

func (o *owners) result() (starts int, violations []string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.starts, append([]string(nil), o.violations...)
}
