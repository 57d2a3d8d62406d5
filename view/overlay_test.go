package view_test

import (
	"testing"

	"github.com/atmostonce/toolexec/internal/invariants"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/view"
)

type mapBase map[view.Key]*saga.Record

func (m mapBase) Get(tenant, key string) (*saga.Record, error) {
	return m[view.Key{Tenant: tenant, Key: key}], nil
}

type recorder struct {
	puts        int
	reads       map[view.ReadID]bool
	checkpoints map[int32]int64
}

func (r *recorder) Put(int32, *saga.Record, *saga.Record) error { r.puts++; return nil }
func (r *recorder) PutRead(id view.ReadID, _ *saga.Event) error { r.reads[id] = true; return nil }
func (r *recorder) DeleteRead(id view.ReadID) error             { r.reads[id] = false; return nil }
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
	ov := view.New(base)
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
	w := &recorder{reads: map[view.ReadID]bool{}, checkpoints: map[int32]int64{}}
	if err := ov.Write(w, "events", map[int32]int64{3: 2}, nil); err != nil {
		t.Fatal(err)
	}
	if w.puts != 1 || !w.reads[view.ReadIDOf(3, &read)] || w.checkpoints[3] != 2 {
		t.Fatalf("written: %+v", w)
	}
}

// In a strict overlay (the tick's), an event its own fold ignores is an
// impossible state: under invariants it panics.
func TestStrictOverlayPanicsOnAnIgnoredEvent(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("needs -tags invariants or -race")
	}
	ov := view.New(mapBase{}, view.Strict())
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
