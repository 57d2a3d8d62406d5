package saga_test

import (
	"reflect"
	"testing"

	"github.com/atmostonce/toolexec/saga"
)

// TestAuditFactsLeaveTheRecordAsItIs: the replayed and conflicted events
// a decision logs fold to the very record they were decided on,
// LastEventAt included, so that a member need not rewrite it and a
// restore folds them to the same bytes.
func TestAuditFactsLeaveTheRecordAsItIs(t *testing.T) {
	env := saga.Env{Now: 100, Policy: func(string) (saga.Policy, bool) { return saga.Policy{RetentionMs: 1000, PendingTTLMs: 500}, true }}
	in := saga.Input{Type: saga.InputCall, IntentID: "A", Tenant: "t", Key: "k", Tool: "charge", Args: []byte("a"), ArgsHash: []byte("h")}
	rec := foldDecision(nil, saga.Decide(nil, in, env))
	rec = saga.Apply(rec, saga.Event{Kind: saga.EvOutcome, Tenant: "t", Key: "k", At: 150, CallID: "A", Status: saga.StatusSucceeded})
	env.Now = 200
	dup := in
	dup.IntentID = "B"
	other := in
	other.IntentID, other.ArgsHash = "C", []byte("other")
	for _, d := range []saga.Decision{saga.Decide(rec.Clone(), dup, env), saga.Decide(rec.Clone(), other, env)} {
		if len(d.Events) != 1 || !d.Events[0].Kind.AuditOnly() {
			t.Fatalf("decision %+v: want one audit fact", d)
		}
		if got := foldDecision(rec.Clone(), d); !reflect.DeepEqual(got, rec) {
			t.Fatalf("%s changed the record:\n got  %+v\n want %+v", d.Events[0].Kind, got, rec)
		}
	}
}

func foldDecision(rec *saga.Record, d saga.Decision) *saga.Record {
	for _, ev := range d.Events {
		rec = saga.Apply(rec, ev)
	}
	return rec
}
