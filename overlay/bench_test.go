package overlay_test

import (
	"fmt"
	"testing"

	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
)

// BenchmarkWriteUnchanged: the write of a tick whose keys are all loaded
// and left unchanged (replays, conflicts), 100 keys with a stored record
// each, the cost per key.
func BenchmarkWriteUnchanged(b *testing.B) {
	const keys = 100
	base := mapBase{}
	for i := range keys {
		k := fmt.Sprintf("k%d", i)
		base[overlay.Key{Tenant: "t", Key: k}] = &saga.Record{Tenant: "t", Key: k, Tool: "x", Status: saga.StatusSucceeded,
			ArgsHash: make([]byte, 32), Args: make([]byte, 200), Result: make([]byte, 200), CalledAt: 1, CompletedAt: 2,
			Origin: saga.Waiter{IntentID: "i" + k}, DownstreamKey: "dk" + k}
	}
	w := &recorder{reads: map[overlay.ReadID]bool{}, checkpoints: map[int32]int64{}}
	b.ReportAllocs()
	for b.Loop() {
		ov := overlay.New(base)
		for i := range keys {
			if _, err := ov.Load(0, "t", fmt.Sprintf("k%d", i)); err != nil {
				b.Fatal(err)
			}
		}
		if err := ov.Write(w, "events", map[int32]int64{0: 1}, nil); err != nil {
			b.Fatal(err)
		}
	}
}
