package reconciler

import (
	"time"

	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/topics"
)

func viewStore(t *testing.T) *state.Store {
	t.Helper()
	st, err := state.Open(t.TempDir(), state.Options{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func viewRecord(t *testing.T, off int64, ev saga.Event) *kgo.Record {
	t.Helper()
	b, err := eventlog.Encode(&ev)
	if err != nil {
		t.Fatal(err)
	}
	return &kgo.Record{Topic: "ev", Partition: 0, Offset: off, Value: b}
}

func viewFold(t *testing.T, r *Reconciler, recs ...*kgo.Record) {
	t.Helper()
	if err := r.foldPartition(0, r.owned[0], recs); err != nil {
		t.Fatal(err)
	}
}

func viewInvestigation(t *testing.T, st *state.Store) *Investigation {
	t.Helper()
	b, err := st.Aux(investigationKey("acme", "k1", PhaseCall))
	if err != nil {
		t.Fatal(err)
	}
	if b == nil {
		return nil
	}
	inv, err := decodeInvestigation(b)
	if err != nil {
		t.Fatal(err)
	}
	return inv
}

// The fold keeps the view, its checkpoint and the investigations in step:
// an investigation survives events that leave its subject as it is, and
// goes in the batch that ends its subject.
func TestReconcilerFoldDropsObsoleteInvestigations(t *testing.T) {
	st := viewStore(t)
	r := &Reconciler{store: st, cfg: Config{Names: topics.Names{Events: "ev"}, Now: time.Now}, owned: map[int32]*partition{0: {epoch: 1}}}
	w := &saga.Waiter{IntentID: "A", Type: "call", At: 1}
	started := saga.Event{Kind: saga.EvStarted, Tenant: "acme", Key: "k1", At: 1, IntentID: "A", Tool: "pay",
		ArgsHash: []byte{1}, Args: []byte{0x80}, PendingTTL: 10, RetentionMs: 100, Attempt: 1, Waiter: w}
	unknown := saga.Event{Kind: saga.EvOutcome, Tenant: "acme", Key: "k1", At: 2, IntentID: "A", CallID: "A", Status: saga.StatusUnknown}
	viewFold(t, r, viewRecord(t, 0, started), viewRecord(t, 1, unknown))
	if c, _ := st.Checkpoint("ev", 0); c != 2 || r.owned[0].next != 2 {
		t.Fatalf("checkpoint %d, position %d, want 2", c, r.owned[0].next)
	}
	if err := r.remember(Subject{Tenant: "acme", Key: "k1"}, &Investigation{Phase: PhaseCall, CallID: "A", Attempts: 2}); err != nil {
		t.Fatal(err)
	}

	dup := saga.Event{Kind: saga.EvWaiting, Tenant: "acme", Key: "k1", At: 3, IntentID: "B", Waiter: &saga.Waiter{IntentID: "B", Type: "call", At: 3}}
	viewFold(t, r, viewRecord(t, 1, unknown), viewRecord(t, 2, dup)) // offset 1 again: folded before, skipped
	if inv := viewInvestigation(t, st); inv == nil || inv.Attempts != 2 {
		t.Fatalf("a duplicate parked on the key dropped its investigation: %+v", inv)
	}
	if rec, _ := st.Get("acme", "k1"); rec == nil || len(rec.Waiters) != 1 || rec.Status != saga.StatusUnknown {
		t.Fatalf("record %+v", rec)
	}

	resolved := saga.Event{Kind: saga.EvResolved, Tenant: "acme", Key: "k1", At: 4, IntentID: "R", CallID: "A",
		Status: saga.StatusSucceeded, Result: []byte{0xa2, 'o', 'k'}, By: "reconciler"}
	viewFold(t, r, viewRecord(t, 3, resolved))
	if inv := viewInvestigation(t, st); inv != nil {
		t.Fatalf("the investigation of a settled key survived: %+v", inv)
	}
	rec, _ := st.Get("acme", "k1")
	if rec == nil || rec.Status != saga.StatusSucceeded || rec.Result != nil || len(rec.Args) == 0 {
		t.Fatalf("settled record in the view %+v (result dropped, args kept)", rec)
	}
	if d, _ := st.InDoubt(0, 10); len(d) != 0 {
		t.Fatalf("doubt index %+v", d)
	}
}
