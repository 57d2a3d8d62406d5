package reconciler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// A compensatable call in doubt whose compensating tool never answers
// (connection refused, so every compensation comes back not_executed and
// the call is in doubt again) must not start a fresh investigation each
// time and compensate for ever: each return is a failed round, and the
// key is escalated after MaxAttempts of them.
func TestReconcilerEscalatesACompensationThatNeverReachesItsTool(t *testing.T) {
	reg := tools.NewRegistry()
	never := tools.Func(func(context.Context, tools.Request) tools.Outcome { return tools.Outcome{Status: tools.NotExecuted} })
	for _, spec := range []tools.Spec{
		{Name: "pay", Class: tools.Compensatable, URL: "http://127.0.0.1:1/pay", CompensateWith: "refund"},
		{Name: "refund", Class: tools.NativeKey, URL: "http://127.0.0.1:1/refund"},
	} {
		if err := reg.Register(spec, never); err != nil {
			t.Fatal(err)
		}
	}
	r := scanReconciler(t, reg, 100)
	now := int64(1_000_000)
	r.cfg.Now = func() time.Time { return time.UnixMilli(now) }
	putInDoubt(t, r, "acme", "k1", "pay")
	ids := map[string]bool{}
	for rounds := 0; ; {
		rec, err := r.store.Get("acme", "k1")
		if err != nil {
			t.Fatal(err)
		}
		subj, _ := SubjectOf(rec, r.lookup)
		inv, err := r.investigation(subj)
		if err != nil {
			t.Fatal(err)
		}
		step := Plan(now, subj, inv, r.cfg.Policy)
		switch step.Kind {
		case StepWait:
			now = step.At
			continue
		case StepEscalate:
			if rounds != testPolicy.MaxAttempts || !strings.Contains(step.Inv.Reason, "came back without reaching its tool") {
				t.Fatalf("escalated after %d compensations (%q), want %d", rounds, step.Inv.Reason, testPolicy.MaxAttempts)
			}
			return
		case StepCompensate:
		default:
			t.Fatalf("round %d: step %s (%+v)", rounds, step.Kind, step.Inv)
		}
		if rounds++; rounds > 2*testPolicy.MaxAttempts {
			t.Fatalf("%d compensations of a call whose compensating tool never answers, and no escalation", rounds)
		}
		if ids[step.Cmd.ID] {
			t.Fatalf("round %d reuses command id %s", rounds, step.Cmd.ID)
		}
		ids[step.Cmd.ID] = true
		if err := r.remember(subj, &step.Inv); err != nil {
			t.Fatal(err)
		}
		compensationBack(t, r, now, step.Cmd.ID)
		now += 1000
	}
}

// compensationBack folds what the executor logs for a compensate command
// whose compensating tool refused the connection.
func compensationBack(t *testing.T, r *Reconciler, at int64, id string) {
	t.Helper()
	off := r.owned[0].next
	w := &saga.Waiter{IntentID: id, Type: wire.TypeCompensate, At: at}
	started := saga.Event{Kind: saga.EvCompensationStarted, Tenant: "acme", Key: "k1", At: at, IntentID: id, Tool: "refund",
		Waiter: w, By: "reconciler", DownstreamKey: "tk2_" + id, PendingTTL: 10}
	back := saga.Event{Kind: saga.EvCompensationOutcome, Tenant: "acme", Key: "k1", At: at + 1, IntentID: id, CallID: id,
		Status: saga.StatusNotExecuted, Err: &saga.Error{Code: "connection_refused"}}
	viewFold(t, r, viewRecord(t, off, started), viewRecord(t, off+1, back))
	if rec, _ := r.store.Get("acme", "k1"); rec == nil || rec.Status != saga.StatusUnknown {
		t.Fatalf("after a compensation that never reached its tool the key is %+v, want unknown", rec)
	}
}
