package chaos

import (
	"testing"

	"github.com/atmostonce/toolexec/saga"
)

// The fold of the log tells each call of a key and each compensation by
// its downstream key, with what became of it, and notices a compensation
// started while the call could still land.
func TestFoldEventGenerations(t *testing.T) {
	hist := map[string]*keyHistory{}
	w := func(id string) *saga.Waiter { return &saga.Waiter{IntentID: id, Type: "call"} }
	evs := []saga.Event{
		// A legacy call (no downstream key in its event), settled not_executed.
		{Kind: saga.EvStarted, IntentID: "A", Tool: ToolComp, At: 10, PendingTTL: 100, Attempt: 1, Waiter: w("A")},
		{Kind: saga.EvOutcome, IntentID: "A", CallID: "A", Status: saga.StatusUnknown, At: 11},
		{Kind: saga.EvResolved, IntentID: "R", CallID: "A", Status: saga.StatusNotExecuted, At: 200, By: "reconciler"},
		// The next call, in doubt; an undo before its pending_ttl that never
		// reached its tool, then a forced one, then one after the ttl.
		{Kind: saga.EvStarted, IntentID: "B", Tool: ToolComp, At: 300, PendingTTL: 100, Attempt: 2, Waiter: w("B"), DownstreamKey: "tk2_b"},
		{Kind: saga.EvOutcome, IntentID: "B", CallID: "B", Status: saga.StatusUnknown, At: 301},
		{Kind: saga.EvCompensationStarted, IntentID: "C1", Tool: ToolUndo, At: 350, Waiter: w("C1"), DownstreamKey: "tk2_c1"},
		{Kind: saga.EvCompensationOutcome, IntentID: "C1", CallID: "C1", Status: saga.StatusNotExecuted, At: 351},
		{Kind: saga.EvCompensationStarted, IntentID: "C2", Tool: ToolUndo, At: 360, Waiter: w("C2"), DownstreamKey: "tk2_c2", Forced: true},
		{Kind: saga.EvCompensationOutcome, IntentID: "C2", CallID: "C2", Status: saga.StatusNotExecuted, At: 361},
		{Kind: saga.EvCompensationStarted, IntentID: "C3", Tool: ToolUndo, At: 400, Waiter: w("C3"), DownstreamKey: "tk2_c3"},
		{Kind: saga.EvCompensationOutcome, IntentID: "C3", CallID: "C3", Status: saga.StatusSucceeded, At: 401},
	}
	for _, ev := range evs {
		ev.Tenant, ev.Key = "t0", "k1"
		foldEvent(hist, "t0/k1", &ev)
	}
	h := hist["t0/k1"]
	want := []generation{{ID: "A", DK: saga.DownstreamKey("", "t0", ToolComp, "k1"), At: 10, Deadline: 110, Status: saga.StatusNotExecuted},
		{ID: "B", DK: "tk2_b", At: 300, Deadline: 400, Status: saga.StatusCompensated}}
	if len(h.Calls) != 2 || h.Calls[0] != want[0] || h.Calls[1] != want[1] {
		t.Errorf("calls %+v, want %+v", h.Calls, want)
	}
	wantComps := []generation{{ID: "C1", DK: "tk2_c1", At: 350, Status: saga.StatusNotExecuted},
		{ID: "C2", DK: "tk2_c2", At: 360, Status: saga.StatusNotExecuted}, {ID: "C3", DK: "tk2_c3", At: 400, Status: saga.StatusCompensated}}
	if len(h.Comps) != 3 || h.Comps[0] != wantComps[0] || h.Comps[1] != wantComps[1] || h.Comps[2] != wantComps[2] {
		t.Errorf("compensations %+v, want %+v", h.Comps, wantComps)
	}
	if len(h.EarlyUndo) != 1 {
		t.Errorf("early undos %q, want C1's only (C2 was forced, C3 came after the ttl)", h.EarlyUndo)
	}
}
