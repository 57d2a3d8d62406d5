package chaos

import (
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
)

// The verdict must fail on each kind of broken promise and pass on the
// legitimate outcomes (escalation, a key settled by its class's path).
func TestCheckFlagsEachViolation(t *testing.T) {
	dk := tools.DownstreamKey("t0", ToolProbe, "k1")
	base := func() checkInput {
		return checkInput{
			intents: map[string]intentRec{"i1": {ID: "i1", Tenant: "t0", Key: "k1", Tool: ToolProbe, Produced: true, Terminal: []string{"succeeded"}}},
			ledger:  LedgerStats{Keys: map[string]keyLedger{dk: {Path: "/probe", Tenant: "t0", Key: "k1", Calls: 1, Effects: 1}}},
			hist: map[string]*keyHistory{"t0/k1": {Tool: ToolProbe, Started: 1, Unknown: 1, ResolvedBy: map[string]int{"reconciler": 1},
				ResolvedSt: []saga.Status{saga.StatusSucceeded}, LastStatus: saga.StatusSucceeded}},
			escalated: map[string]bool{},
		}
	}
	cases := []struct {
		name string
		mod  func(*checkInput)
		want string // substring of the one violation; "" = none
	}{
		{"clean", func(*checkInput) {}, ""},
		{"duplicate effect", func(in *checkInput) { k := in.ledger.Keys[dk]; k.Effects = 2; in.ledger.Keys[dk] = k }, "duplicate_effect"},
		{"effect without started", func(in *checkInput) { in.hist["t0/k1"].Started = 0 }, "effect_without_started"},
		{"lost", func(in *checkInput) { r := in.intents["i1"]; r.Terminal = nil; in.intents["i1"] = r }, "lost_intent"},
		{"two answers", func(in *checkInput) {
			r := in.intents["i1"]
			r.Terminal = []string{"succeeded", "succeeded"}
			in.intents["i1"] = r
		}, "multiple_terminal_answers"},
		{"escalated is not lost", func(in *checkInput) {
			r := in.intents["i1"]
			r.Terminal, r.Pending = nil, 1
			in.intents["i1"] = r
			in.escalated["t0/k1"] = true
			in.hist["t0/k1"].LastStatus = saga.StatusUnknown
		}, ""},
		{"unsettled", func(in *checkInput) { in.hist["t0/k1"].LastStatus = saga.StatusUnknown }, "unsettled"},
		{"not executed but effect", func(in *checkInput) {
			h := in.hist["t0/k1"]
			h.LastStatus, h.ResolvedSt = saga.StatusNotExecuted, []saga.Status{saga.StatusNotExecuted}
		}, "effect_recorded_not_executed"},
		{"probe key settled by compensation", func(in *checkInput) {
			h := in.hist["t0/k1"]
			h.ResolvedBy, h.ResolvedSt, h.CompInDoubt = map[string]int{}, nil, 1
		}, "wrong_path"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := base()
			c.mod(&in)
			var r Report
			check(in, &r)
			switch {
			case c.want == "" && len(r.Violations) != 0:
				t.Fatalf("violations %v, want none", r.Violations)
			case c.want != "" && (len(r.Violations) != 1 || !strings.Contains(r.Violations[0], c.want)):
				t.Fatalf("violations %v, want one %s", r.Violations, c.want)
			}
		})
	}
}
