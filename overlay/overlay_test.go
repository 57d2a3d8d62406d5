package overlay_test

import (
	"testing"

	"github.com/atmostonce/toolexec/internal/invariants"
	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
)

type mapBase map[overlay.Key]*saga.Record

func (m mapBase) Get(tenant, key string) (*saga.Record, error) {
	return m[overlay.Key{Tenant: tenant, Key: key}], nil
}

type recorder struct {
	puts        int
	reads       map[overlay.ReadID]bool
	checkpoints map[int32]int64
}

func (r *recorder) Put(int32, *saga.Record, *saga.Record) error    { r.puts++; return nil }
func (r *recorder) PutRead(id overlay.ReadID, _ *saga.Event) error { r.reads[id] = true; return nil }
func (r *recorder) DeleteRead(id overlay.ReadID) error             { r.reads[id] = false; return nil }
func (r *recorder) SetCheckpoint(_ string, p int32, next int64) error {
	r.checkpoints[p] = next
	return nil
}

func started(id string) saga.Event {
	return saga.Event{Kind: saga.EvStarted, Tenant: "t", Key: "k", At: 1, IntentID: id, Tool: "x", ArgsHash: []byte{1},
		Waiter: &saga.Waiter{IntentID: id}}
}

// The overlay folds events over the base without touching it, and writes
// the records, the pending reads and the checkpoint together.
func TestOverlayFoldsAndWritesWithItsCheckpoint(t *testing.T) {
	base := mapBase{}
	ov := overlay.New(base)
	ev := started("A")
	if err := ov.Fold(3, &ev); err != nil {
		t.Fatal(err)
	}
	read := saga.Event{Kind: saga.EvReadStarted, Tenant: "t", Key: "r", At: 1, IntentID: "R", Tool: "y", Waiter: &saga.Waiter{IntentID: "R"}}
	if err := ov.Fold(3, &read); err != nil {
		t.Fatal(err)
	}
	en, ok := ov.Lookup("t", "k")
	if !ok || en.Prev != nil || en.Cur == nil || en.Cur.Status != saga.StatusStarted || en.P != 3 {
		t.Fatalf("entry %+v", en)
	}
	if len(base) != 0 {
		t.Fatal("the base was written")
	}
	w := &recorder{reads: map[overlay.ReadID]bool{}, checkpoints: map[int32]int64{}}
	if err := ov.Write(w, "events", map[int32]int64{3: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if w.puts != 1 || !w.reads[overlay.ReadIDOf(3, &read)] || w.checkpoints[3] != 2 {
		t.Fatalf("written: %+v", w)
	}
}

// In a strict overlay (the tick's), an event its own fold ignores is an
// impossible state: under invariants it panics.
func TestStrictOverlayPanicsOnAnIgnoredEvent(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("needs -tags invariants or -race")
	}
	ov := overlay.New(mapBase{}, overlay.Strict())
	en, err := ov.Load(0, "t", "k")
	if err != nil {
		t.Fatal(err)
	}
	ov.Apply(en, started("A"))
	defer func() {
		if recover() == nil {
			t.Fatal("an outcome of a call that is not the key's was folded without a panic")
		}
	}()
	ov.Apply(en, saga.Event{Kind: saga.EvOutcome, Tenant: "t", Key: "k", At: 2, CallID: "B", Status: saga.StatusSucceeded})
}

// An entry given only audit facts (replayed, conflicted), or only loaded,
// is not written again, and an overlay of such entries has nothing but
// checkpoints to write (a replay rewrote and synced its record
// for its time alone).
func TestOverlayWritesNoRecordForAuditFactsAlone(t *testing.T) {
	ev := started("A")
	rec := saga.Apply(nil, ev)
	rec = saga.Apply(rec, saga.Event{Kind: saga.EvOutcome, Tenant: "t", Key: "k", At: 2, CallID: "A", Status: saga.StatusSucceeded})
	base := mapBase{{Tenant: "t", Key: "k"}: rec}
	ov := overlay.New(base, overlay.Strict())
	en, err := ov.Load(0, "t", "k")
	if err != nil {
		t.Fatal(err)
	}
	ov.Apply(en, saga.Event{Kind: saga.EvReplayed, Tenant: "t", Key: "k", At: 9, IntentID: "B"})
	ov.Apply(en, saga.Event{Kind: saga.EvConflicted, Tenant: "t", Key: "k", At: 10, IntentID: "C", ArgsHash: []byte{2}})
	if _, err := ov.Load(0, "t", "other"); err != nil {
		t.Fatal(err)
	}
	if en.Cur.LastEventAt != rec.LastEventAt {
		t.Fatalf("an audit fact moved LastEventAt to %d", en.Cur.LastEventAt)
	}
	if ov.Changed() {
		t.Fatal("an overlay of audit facts says it changed something")
	}
	w := &recorder{reads: map[overlay.ReadID]bool{}, checkpoints: map[int32]int64{}}
	if err := ov.Write(w, "events", map[int32]int64{0: 5}, nil); err != nil {
		t.Fatal(err)
	}
	if w.puts != 0 || w.checkpoints[0] != 5 {
		t.Fatalf("%d records put, checkpoint %d; want 0 and 5", w.puts, w.checkpoints[0])
	}
	ov.Apply(en, saga.Event{Kind: saga.EvExpired, Tenant: "t", Key: "k", At: 11})
	if !ov.Changed() {
		t.Fatal("an expiry is a change")
	}
}
