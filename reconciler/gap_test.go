package reconciler

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
)

// A view whose checkpoint lies below the log start (the log's retention
// took events it needed) is cleared and rebuilt from the log start: the
// lost events may have settled and expired a key the view still holds in
// doubt, which would otherwise be retried for ever under a downstream key
// the tool has forgotten.
func TestReconcilerRebuildsAViewTheLogNoLongerCovers(t *testing.T) {
	r := scanReconciler(t, tools.NewRegistry(), 100)
	r.nControl = 1
	putInDoubt(t, r, "acme", "k1", "pay")
	putInDoubt(t, r, "acme", "k2", "pay")
	if err := r.remember(Subject{Tenant: "acme", Key: "k1"}, &Investigation{Phase: PhaseCall, CallID: "i-k1", Attempts: 3}); err != nil {
		t.Fatal(err)
	}
	next := r.owned[0].next
	start := next
	r.startOffset = func(context.Context, int32) (int64, error) { return start, nil }
	ctx := context.Background()
	if got, err := r.bridgeGap(ctx, 0, next); err != nil || got != next {
		t.Fatalf("no gap: resumes at %d (%v), want the checkpoint %d", got, err, next)
	}
	if got, err := r.bridgeGap(ctx, 0, 0); err != nil || got != 0 {
		t.Fatalf("a view that never folded the partition: %d (%v)", got, err)
	}
	start = next + 100
	got, err := r.bridgeGap(ctx, 0, next)
	if err != nil || got != start {
		t.Fatalf("with a gap: resumes at %d (%v), want the log start %d", got, err, start)
	}
	for _, k := range []string{"k1", "k2"} {
		if rec, err := r.store.Get("acme", k); err != nil || rec != nil {
			t.Errorf("record %s kept: %+v (%v)", k, rec, err)
		}
	}
	if d, _ := r.store.InDoubt(0, 10); len(d) != 0 {
		t.Errorf("doubt index kept %+v", d)
	}
	if b, _ := r.store.Aux(investigationKey("acme", "k1", PhaseCall)); b != nil {
		t.Error("the investigation of a cleared key was kept")
	}
	if c, _ := r.store.Checkpoint("ev", 0); c != start {
		t.Errorf("checkpoint %d, want %d", c, start)
	}
	if v := counterValue(t, r.m.ViewGaps); v != 1 {
		t.Errorf("view_gaps_total %v, want 1", v)
	}
}

// A fetch that reports the log start past the view's next offset (the
// start moved after the assignment's gap check, and franz-go resumed at
// it; or the reconciler fell behind the log's retention while it
// followed) rebuilds the view from that start before folding the fetch's
// records: the events in between, never folded, may have settled a key
// the view holds in doubt. A view that never folded the partition starts
// there with nothing to clear.
func TestReconcilerRebuildsTheViewWhenAFetchStartsPastIt(t *testing.T) {
	r := scanReconciler(t, tools.NewRegistry(), 100)
	r.nControl = 1
	putInDoubt(t, r, "acme", "k1", "pay")
	if err := r.remember(Subject{Tenant: "acme", Key: "k1"}, &Investigation{Phase: PhaseCall, CallID: "i-k1", Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	next, epoch := r.owned[0].next, r.owned[0].epoch
	r.epochs = epoch // as after the assignment that gave it
	start := next + 50
	w := &saga.Waiter{IntentID: "i-k2", Type: "call", At: 3}
	k2 := saga.Event{Kind: saga.EvStarted, Tenant: "acme", Key: "k2", At: 3, IntentID: w.IntentID, Tool: "pay",
		ArgsHash: []byte{1}, Args: []byte{0x80}, PendingTTL: 10, RetentionMs: 1 << 30, Attempt: 1, Waiter: w}
	fetched := kgo.Fetches{{Topics: []kgo.FetchTopic{{Topic: "ev", Partitions: []kgo.FetchPartition{
		{Partition: 0, LogStartOffset: start, Records: []*kgo.Record{viewRecord(t, start, k2)}}}}}}}
	if err := r.fold(fetched); err != nil {
		t.Fatal(err)
	}
	if rec, err := r.store.Get("acme", "k1"); err != nil || rec != nil {
		t.Errorf("k1, whose later events are gone, kept in the view: %+v (%v)", rec, err)
	}
	if b, _ := r.store.Aux(investigationKey("acme", "k1", PhaseCall)); b != nil {
		t.Error("the investigation of a cleared key was kept")
	}
	if rec, err := r.store.Get("acme", "k2"); err != nil || rec == nil || rec.Status != saga.StatusStarted {
		t.Errorf("k2, fetched past the start, is %+v (%v), want started", rec, err)
	}
	o := r.owned[0]
	if o.next != start+1 || o.epoch == epoch {
		t.Errorf("next %d epoch %d, want %d and a new epoch (results of the old view dropped)", o.next, o.epoch, start+1)
	}
	if c, _ := r.store.Checkpoint("ev", 0); c != start+1 {
		t.Errorf("checkpoint %d, want %d", c, start+1)
	}
	if v := counterValue(t, r.m.ViewGaps); v != 1 {
		t.Errorf("view_gaps_total %v, want 1", v)
	}
}
