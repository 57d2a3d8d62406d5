package eventlog

import (
	"testing"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
)

// TestReadKeysNameTheirTenantAndKey: two tenants' reads with one
// intent id on one partition are two pending reads.
func TestReadKeysNameTheirTenantAndKey(t *testing.T) {
	a := ReadKey(3, "alice", "k", "req-1")
	b := ReadKey(3, "bob", "k", "req-1")
	if string(a) == string(b) {
		t.Fatalf("one key for two tenants: %q", a)
	}
	// The routing key is length-prefixed: no key's id can pose as another
	// key's (a tenant has no "/", so the routing key itself is unambiguous).
	if string(ReadKey(3, "a", "k", "x1")) == string(ReadKey(3, "a", "kx", "1")) {
		t.Fatal("key and intent id collide by concatenation")
	}
}

// TestMigrateReadKeys: a store written before reads were keyed by tenant
// and key keeps its pending reads under the new keys.
func TestMigrateReadKeys(t *testing.T) {
	st, err := state.Open(t.TempDir(), state.Options{CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ev := &saga.Event{Kind: saga.EvReadStarted, Tenant: "alice", Key: "k", At: 1, IntentID: "req-1", Tool: "t",
		Waiter: &saga.Waiter{IntentID: "req-1"}}
	v, err := Encode(ev)
	if err != nil {
		t.Fatal(err)
	}
	old := append(ReadPrefix(2), "req-1"...) // the first layout
	b := st.NewBatch()
	if err := b.PutAux(old, v); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(state.Sync); err != nil {
		t.Fatal(err)
	}
	for round, want := range []int{1, 0} { // idempotent
		n, err := MigrateReadKeys(st)
		if err != nil || n != want {
			t.Fatalf("round %d: moved %d (%v), want %d", round, n, err, want)
		}
	}
	if got, _ := st.Aux(old); got != nil {
		t.Fatal("the old key is still there")
	}
	if got, _ := st.Aux(ReadKeyOf(2, ev)); got == nil {
		t.Fatal("the read is not under its new key")
	}
	reads, err := PendingReads(st, 2, 10)
	if err != nil || len(reads) != 1 || reads[0].Tenant != "alice" {
		t.Fatalf("pending reads %+v (%v)", reads, err)
	}
}
