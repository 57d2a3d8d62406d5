package chaos

import (
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/saga"
)

// TestApprovalCheck: the log's fold marks a call of ToolApproval approved
// only after an approved event of its request and digest, and the verdict
// flags a call without one, whatever the tool saw.
func TestApprovalCheck(t *testing.T) {
	w := &saga.Waiter{IntentID: "A", Type: "call"}
	request := saga.Event{Kind: saga.EvAwaitingApproval, IntentID: "A", Tool: ToolApproval, ArgsHash: []byte("x"), Attempt: 1, Waiter: w, ApprovalUntil: 99}
	approved := func(callID, digest string) saga.Event {
		return saga.Event{Kind: saga.EvApproved, IntentID: "P", CallID: callID, ArgsHash: []byte(digest), By: "chaos-approver", At: 5}
	}
	started := saga.Event{Kind: saga.EvStarted, IntentID: "A", Tool: ToolApproval, ArgsHash: []byte("x"), Attempt: 1, Waiter: w, DownstreamKey: "tk2_a", At: 5}
	for _, c := range []struct {
		name string
		evs  []saga.Event
		want string
	}{
		{"approved, then started", []saga.Event{request, approved("A", "x"), started}, ""},
		{"started without an approval", []saga.Event{request, started}, "call_without_approval"},
		{"an approval of other arguments", []saga.Event{request, approved("A", "y"), started}, "call_without_approval"},
		{"an approval of another request", []saga.Event{request, approved("B", "x"), started}, "call_without_approval"},
		{"denied", []saga.Event{request, {Kind: saga.EvDenied, IntentID: "N", CallID: "A", ArgsHash: []byte("x"), By: "b", At: 5}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			hist := map[string]*keyHistory{}
			for _, ev := range c.evs {
				ev.Tenant, ev.Key = "t0", "k1"
				if ev.At == 0 {
					ev.At = 1
				}
				foldEvent(hist, "t0/k1", &ev)
			}
			var r Report
			checkApprovals(checkInput{hist: hist}, &r)
			var kinds []string
			for _, v := range r.Violations {
				kind, _, _ := strings.Cut(v, ":")
				kinds = append(kinds, kind)
			}
			if strings.Join(kinds, ",") != c.want || r.Approvals["requested"] != 1 {
				t.Fatalf("violations %q (approvals %v), want kinds %q", r.Violations, r.Approvals, c.want)
			}
		})
	}
}
