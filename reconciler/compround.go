package reconciler

import (
	"fmt"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
)

// compensationRound is what the fold needs to know of a compensation in
// doubt before an event is applied: the event may end it.
type compensationRound struct {
	call, id, tool string
}

// compensationOf snapshots rec's compensation of a call in doubt; false
// when there is none. Taken before saga.Apply, which changes rec.
func compensationOf(rec *saga.Record) (compensationRound, bool) {
	if compensationIdentity(rec) == "" || callIdentity(rec) == "" {
		return compensationRound{}, false
	}
	return compensationRound{call: rec.Origin.IntentID, id: rec.Comp.Origin.IntentID, tool: rec.Comp.Tool}, true
}

// returnedFrom reports whether after is the call of c in doubt again: the
// compensation c ended without reaching its tool (not_executed, from the
// executor or from a probe's 404), and the key is as before it.
//
// Why it matters: each compensation that comes back so puts the call back
// in doubt; a fresh investigation (the old one goes with the
// compensation's subject change) would compensate again, and a
// compensating tool that keeps refusing connections would loop for ever,
// never escalated. So the fold counts such a return as a failed round of the call's investigation,
// which Plan escalates at MaxAttempts like any other.
func (c compensationRound) returnedFrom(after *saga.Record) bool {
	return after != nil && (after.Status == saga.StatusStarted || after.Status == saga.StatusUnknown) && after.Origin.IntentID == c.call
}

func (c compensationRound) String() string {
	return fmt.Sprintf("compensation %s by %s came back without reaching its tool (not_executed)", c.id, c.tool)
}

// countReturned adds the compensations that came back in this poll to
// the investigation of rec's call, in batch b: each one a failed round,
// with the backoff of a failed round before the next compensation.
func (f *pollFold) countReturned(b *state.Batch, tenant, key string, rec *saga.Record, rounds []string) error {
	k := investigationKey(tenant, key, PhaseCall)
	inv := &Investigation{Phase: PhaseCall, CallID: rec.Origin.IntentID, StartedAt: f.now}
	raw, err := f.st.Aux(k)
	if err != nil {
		return err
	}
	if raw != nil {
		if stored, err := decodeInvestigation(raw); err == nil && stored.Phase == PhaseCall && stored.CallID == inv.CallID {
			inv = stored
		}
	}
	inv.Attempts += len(rounds)
	inv.Compensations += len(rounds)
	inv.Sent, inv.Reason = nil, rounds[len(rounds)-1]
	inv.NextAt = f.now + Backoff(inv.Attempts, f.policy).Milliseconds()
	v, err := encodeInvestigation(inv)
	if err != nil {
		return err
	}
	return b.PutAux(k, v)
}
