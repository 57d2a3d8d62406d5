package chaos

import (
	"strings"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/saga"
)

// The verdict must fail on each kind of broken promise and pass on the
// legitimate outcomes (escalation, a key settled by its class's path, a
// key called again after its first call was settled not_executed or
// expired).
func TestCheckFlagsEachViolation(t *testing.T) {
	const dk, dk2, undo = "tk2_first", "tk2_second", "tk2_undo"
	at := time.Unix(1_700_000_000, 0)
	base := func() checkInput {
		return checkInput{
			intents: map[string]intentRec{"i1": {ID: "i1", Tenant: "t0", Key: "k1", Tool: ToolProbe, Produced: true, Terminal: []string{"succeeded"}}},
			ledger:  LedgerStats{Keys: map[string]keyLedger{dk: {Path: "/probe", Tenant: "t0", Key: "k1", Calls: 1, Effects: 1, FirstEffect: at}}},
			hist: map[string]*keyHistory{"t0/k1": {Tool: ToolProbe, Started: 1, Unknown: 1, ResolvedBy: map[string]int{"reconciler": 1},
				ResolvedSt: []saga.Status{saga.StatusSucceeded}, LastStatus: saga.StatusSucceeded,
				Calls: []generation{{ID: "i1", DK: dk, Status: saga.StatusSucceeded}}}},
			escalated: map[string]bool{},
		}
	}
	// again: the first call never reached the tool (not_executed), a
	// second one under its own downstream key had the effect.
	again := func(in *checkInput) {
		h := in.hist["t0/k1"]
		h.Calls = []generation{{ID: "i0", DK: dk2, Status: saga.StatusNotExecuted}, {ID: "i1", DK: dk, Status: saga.StatusSucceeded}}
		in.ledger.Keys[dk2] = keyLedger{Path: "/probe", Tenant: "t0", Key: "k1", Calls: 1}
	}
	cases := []struct {
		name string
		mod  func(*checkInput)
		want string // the kinds of the violations, comma-separated, in order; "" = none
	}{
		{"clean", func(*checkInput) {}, ""},
		{"duplicate effect", func(in *checkInput) { k := in.ledger.Keys[dk]; k.Effects = 2; in.ledger.Keys[dk] = k }, "duplicate_effect"},
		{"effect under a downstream key no started event carries", func(in *checkInput) { in.hist["t0/k1"].Calls[0].DK = "tk2_other" }, "effect_without_started,succeeded_without_effect"},
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
		{"undecided partition: neither lost nor unsettled", func(in *checkInput) {
			r := in.intents["i1"]
			r.Terminal = nil
			in.intents["i1"] = r
			in.hist["t0/k1"].LastStatus = saga.StatusUnknown
			in.undecided = func(_, _, rk string) bool { return rk == "t0/k1" }
		}, ""},
		{"undecided partition: a duplicate effect still counts", func(in *checkInput) {
			k := in.ledger.Keys[dk]
			k.Effects = 2
			in.ledger.Keys[dk] = k
			in.undecided = func(string, string, string) bool { return true }
		}, "duplicate_effect"},
		{"not executed but effect", func(in *checkInput) {
			h := in.hist["t0/k1"]
			h.LastStatus, h.ResolvedSt, h.Calls[0].Status = saga.StatusNotExecuted, []saga.Status{saga.StatusNotExecuted}, saga.StatusNotExecuted
		}, "effect_recorded_not_executed"},
		{"probe key settled by compensation", func(in *checkInput) {
			h := in.hist["t0/k1"]
			h.ResolvedBy, h.ResolvedSt, h.CompInDoubt = map[string]int{}, nil, 1
		}, "wrong_path"},
		{"called again after not_executed, one effect", again, ""},
		{"called again after not_executed, both calls acted", func(in *checkInput) {
			again(in)
			in.ledger.Keys[dk2] = keyLedger{Path: "/probe", Tenant: "t0", Key: "k1", Calls: 1, Effects: 1, FirstEffect: at}
		}, "effect_recorded_not_executed,duplicate_effect_across_calls"},
		{"a second call while the first had its effect", func(in *checkInput) {
			again(in)
			in.hist["t0/k1"].Calls[0].Status = saga.StatusSucceeded
			in.ledger.Keys[dk2] = keyLedger{Path: "/probe", Tenant: "t0", Key: "k1", Calls: 1, Effects: 1, FirstEffect: at}
		}, "duplicate_effect_across_calls"},
		{"a second call after the first expired", func(in *checkInput) {
			again(in)
			in.hist["t0/k1"].Calls[0].Status, in.hist["t0/k1"].Calls[0].Expired = saga.StatusSucceeded, true
			in.ledger.Keys[dk2] = keyLedger{Path: "/probe", Tenant: "t0", Key: "k1", Calls: 1, Effects: 1, FirstEffect: at}
		}, ""},
		{"a succeeded call whose downstream key saw no effect", func(in *checkInput) {
			again(in)
			in.hist["t0/k1"].Calls[0].Status = saga.StatusUnknown
			in.hist["t0/k1"].Calls[1].DK = dk2
		}, "effect_without_started,succeeded_without_effect"},
		{"an undo that overtook the effect", func(in *checkInput) {
			in.hist["t0/k1"].Comps = []generation{{ID: "c1", DK: undo, Status: saga.StatusCompensated}}
			in.ledger.Keys[undo] = keyLedger{Path: "/undo", Tenant: "t0", Key: "k1", Calls: 1, Effects: 1, FirstEffect: at.Add(-time.Second)}
		}, "undo_before_effect"},
		{"an undo before an effect whose request came within the call's budget: the documented limit", func(in *checkInput) {
			in.hist["t0/k1"].Calls[0].Deadline = at.Add(-2 * time.Second).UnixMilli()
			k := in.ledger.Keys[dk]
			k.FirstRequest = at.Add(-3 * time.Second)
			in.ledger.Keys[dk] = k
			in.hist["t0/k1"].Comps = []generation{{ID: "c1", DK: undo, Status: saga.StatusCompensated}}
			in.ledger.Keys[undo] = keyLedger{Path: "/undo", Tenant: "t0", Key: "k1", Calls: 1, Effects: 1, FirstEffect: at.Add(-time.Second)}
		}, ""},
		{"an undo before an effect whose request came after the call's deadline", func(in *checkInput) {
			in.hist["t0/k1"].Calls[0].Deadline = at.Add(-2 * time.Second).UnixMilli()
			k := in.ledger.Keys[dk]
			k.FirstRequest = at.Add(-1500 * time.Millisecond)
			in.ledger.Keys[dk] = k
			in.hist["t0/k1"].Comps = []generation{{ID: "c1", DK: undo, Status: saga.StatusCompensated}}
			in.ledger.Keys[undo] = keyLedger{Path: "/undo", Tenant: "t0", Key: "k1", Calls: 1, Effects: 1, FirstEffect: at.Add(-time.Second)}
		}, "undo_before_effect"},
		{"an undo after the effect", func(in *checkInput) {
			in.hist["t0/k1"].Comps = []generation{{ID: "c1", DK: undo, Status: saga.StatusCompensated}}
			in.ledger.Keys[undo] = keyLedger{Path: "/undo", Tenant: "t0", Key: "k1", Calls: 1, Effects: 1, FirstEffect: at.Add(time.Second)}
		}, ""},
		{"an undo the log says never reached its tool", func(in *checkInput) {
			in.hist["t0/k1"].Comps = []generation{{ID: "c1", DK: undo, Status: saga.StatusNotExecuted}}
			in.ledger.Keys[undo] = keyLedger{Path: "/undo", Tenant: "t0", Key: "k1", Calls: 1, Effects: 1, FirstEffect: at.Add(time.Second)}
		}, "effect_recorded_not_executed"},
		{"an undo under a key no compensation_started carries", func(in *checkInput) {
			in.ledger.Keys[undo] = keyLedger{Path: "/undo", Tenant: "t0", Key: "k1", Calls: 1, Effects: 1, FirstEffect: at.Add(time.Second)}
		}, "compensation_without_started"},
		{"a compensation started before the call's pending_ttl", func(in *checkInput) {
			in.hist["t0/k1"].EarlyUndo = []string{"compensation c1 at 5, 995 ms before call i1's pending_ttl ended"}
		}, "compensation_before_pending_ttl"},
		{"a probe key settled by its member's fact", func(in *checkInput) {
			in.hist["t0/k1"].ResolvedBy = map[string]int{"executor": 1}
		}, ""},
		{"an escalation whose answer a member delivered as a fact", func(in *checkInput) {
			in.escalatedCalls = map[callRef]bool{{RK: "t0/k1", DK: dk}: true}
			in.facts = map[callRef]string{{RK: "t0/k1", DK: dk}: "succeeded"}
		}, "escalated_known_answer"},
		{"an escalation of a call its member never sent and nobody resent", func(in *checkInput) {
			in.escalatedCalls = map[callRef]bool{{RK: "t0/k1", DK: dk2}: true}
			in.facts = map[callRef]string{{RK: "t0/k1", DK: dk2}: "not_executed"}
		}, "escalated_known_answer"},
		{"an escalation of a call its member never sent and the reconciler resent", func(in *checkInput) {
			in.escalatedCalls = map[callRef]bool{{RK: "t0/k1", DK: dk}: true} // the tool saw dk (base)
			in.facts = map[callRef]string{{RK: "t0/k1", DK: dk}: "not_executed"}
		}, ""},
		{"an escalation of a call no member knew", func(in *checkInput) {
			in.escalatedCalls = map[callRef]bool{{RK: "t0/k1", DK: dk}: true}
			in.facts = map[callRef]string{{RK: "t0/k1", DK: dk2}: "succeeded"}
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := base()
			c.mod(&in)
			var r Report
			check(in, &r)
			var kinds []string
			for _, v := range r.Violations {
				kind, _, _ := strings.Cut(v, ":")
				kinds = append(kinds, kind)
			}
			if strings.Join(kinds, ",") != c.want {
				t.Fatalf("violations %q, want kinds %q", r.Violations, c.want)
			}
		})
	}
}

// Double terminal answers are counted as well as listed.
func TestDoubleAnswersAreCounted(t *testing.T) {
	in := checkInput{intents: map[string]intentRec{
		"i1": {ID: "i1", Tenant: "t0", Key: "k1", Tool: ToolNative, Produced: true, Terminal: []string{"succeeded", "succeeded"}},
		"i2": {ID: "i2", Tenant: "t0", Key: "k2", Tool: ToolNative, Produced: true, Terminal: []string{"succeeded"}},
		"i3": {ID: "i3", Tenant: "t0", Key: "k3", Tool: ToolNative, Produced: true, Terminal: []string{"failed", "succeeded", "failed"}},
	}, escalated: map[string]bool{}}
	var r Report
	check(in, &r)
	if r.DoubleAnswers != 2 {
		t.Fatalf("double answers %d, want 2 (violations %q)", r.DoubleAnswers, r.Violations)
	}
}
