package saga_test

import (
	"testing"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
)

func lookup(id, tool string) saga.Input {
	in := callTool(id, tool, "")
	in.Type, in.Args, in.ArgsHash = saga.InputLookup, nil, nil
	return in
}

// A lookup answers what the record says and changes nothing: no event,
// no call, no waiter; running before the pending_ttl, in doubt after it,
// the outcome once settled; no record for another tool's key, an expired
// one or none (rejected but not dead-lettered: a lookup is no bad input).
func TestLookup(t *testing.T) {
	started := saga.Decide(nil, call("c1", `{"a":1}`), saga.Env{Now: t0, Policy: policies})
	var rec *saga.Record
	for _, ev := range started.Events {
		rec = saga.Apply(rec, ev)
	}
	step := func(rec *saga.Record, in saga.Input, at int64) saga.Answer {
		t.Helper()
		d := saga.Decide(rec, in, saga.Env{Now: at, Policy: policies})
		if d.Verdict != saga.VerdictLookup || len(d.Events) != 0 || d.Call != nil || len(d.Answers) != 1 {
			t.Fatalf("decision %+v", d)
		}
		a := d.Answers[0]
		if a.To.IntentID != in.IntentID || a.To.ReplyTo != "replies" || a.Tenant != tenant || a.Key != key {
			t.Fatalf("answer addressed %+v", a)
		}
		return a
	}
	if a := step(rec, lookup("l1", "charge"), t0+1); a.Status != codes.StatusPending || a.Err.Code != codes.ErrRunning {
		t.Fatalf("within the pending_ttl: %+v", a)
	}
	if a := step(rec, lookup("l2", "charge"), t0+pendingTTL+1); a.Status != codes.StatusPending || a.Err.Code != codes.ErrInDoubt {
		t.Fatalf("past the pending_ttl: %+v", a)
	}
	done := saga.Complete(rec, saga.Completion{CallID: "c1", Status: saga.StatusSucceeded, Result: []byte{0xc3}}, saga.Env{Now: t0 + 5, Policy: policies})
	for _, ev := range done.Events {
		rec = saga.Apply(rec, ev)
	}
	if a := step(rec, lookup("l3", "charge"), t0+10); a.Status != codes.StatusSucceeded || string(a.Result) != "\xc3" || !a.WasReplay || a.OriginalIntentID != "c1" {
		t.Fatalf("settled: %+v", a)
	}
	noRecord := func(a saga.Answer) bool {
		return a.Status == codes.StatusRejected && a.Err.Code == codes.ReasonInvalidCommand && a.Err.Message == "nothing to look up: "+codes.RefusalNoRecordText && a.Err.Refusal == codes.RefusalNoRecord
	}
	for name, c := range map[string]struct {
		rec *saga.Record
		in  saga.Input
		at  int64
	}{
		"another tool's key": {rec, lookup("l4", "email"), t0 + 10},
		"no record":          {nil, lookup("l5", "charge"), t0},
		"expired":            {rec, lookup("l6", "charge"), t0 + retention + 10},
	} {
		if a := step(c.rec, c.in, c.at); !noRecord(a) {
			t.Errorf("%s: %+v", name, a)
		}
	}
}
