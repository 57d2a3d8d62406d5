package partition

import (
	"github.com/atmostonce/toolexec/internal/invariants"
	"github.com/atmostonce/toolexec/saga"
)

// Calls in flight: the single owner of what this member is calling.
//
// A call is marked when the Step that decides it runs, and stays marked
// from the commit of its started event until the commit of its outcome;
// a transaction that does not commit unmarks what it started. A marked
// key answers duplicates by coalescing (saga.Env.InFlight). Read-only
// calls keep no record, so they are marked apart, by routing key and
// intent id: a new owner calls again every pending read that no call of
// its own serves (Restored).

// flight is one call in flight: where it was started, and which call.
type flight struct {
	p      int32
	epoch  uint64
	callID string
}

type inflight struct {
	keys  map[string]flight // routing key -> the key's call (or compensation)
	reads map[string]flight // readID -> a read-only call
}

func newInflight() inflight {
	return inflight{keys: map[string]flight{}, reads: map[string]flight{}}
}

// readID names a read-only call in flight: its routing key and intent id.
// An intent id alone is not unique across tenants.
func readID(rk, intentID string) string { return rk + "\x00" + intentID }

func (f *inflight) keyInFlight(rk string) bool {
	_, ok := f.keys[rk]
	return ok
}

func (f *inflight) readInFlight(rk, intentID string) bool {
	_, ok := f.reads[readID(rk, intentID)]
	return ok
}

// start marks c. done says whether the key's previous call was recorded
// in this same tick (its mark then gives way to the new call's).
func (f *inflight) start(c Call, done bool) {
	fl := flight{p: c.P, epoch: c.Epoch, callID: c.CallID}
	if c.Kind == saga.CallReadOnly {
		f.reads[readID(c.RK, c.CallID)] = fl
		return
	}
	_, running := f.keys[c.RK]
	invariants.Check(!running || done, "inflight: started %s for %s while a call of the key is in flight", c.CallID, c.RK)
	f.keys[c.RK] = fl
}

// forget unmarks c: its outcome is committed, its read answered, or its
// started event never committed. A key's mark is dropped only if it is
// still c's: a compensation started in the tick that recorded the call
// keeps its own.
func (f *inflight) forget(c Call) {
	if c.Kind == saga.CallReadOnly {
		delete(f.reads, readID(c.RK, c.CallID))
		return
	}
	if fl, ok := f.keys[c.RK]; ok && fl.callID == c.CallID {
		delete(f.keys, c.RK)
	}
}

// release unmarks every call of partition p and returns the keys whose
// calls were still running: their outcomes will be stale.
func (f *inflight) release(p int32) []string {
	var lost []string
	for rk, fl := range f.keys {
		if fl.p == p {
			delete(f.keys, rk)
			lost = append(lost, rk)
		}
	}
	for id, fl := range f.reads {
		if fl.p == p {
			delete(f.reads, id) // the next owner calls it again
		}
	}
	return lost
}

// onPartition counts the keys of p in flight.
func (f *inflight) onPartition(p int32) int {
	n := 0
	for _, fl := range f.keys {
		if fl.p == p {
			n++
		}
	}
	return n
}

// InFlight is the number of keys with a call in flight (read-only calls
// not counted).
func (c *Core) InFlight() int { return len(c.calls.keys) }
