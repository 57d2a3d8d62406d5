package integration

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/wire"
)

// TestLiveAndRestoredFoldsStoreTheSameBytes: the records a member stored
// while deciding (the tick's fold, which skips writing a record that an
// audit-only event such as replayed or conflicted leaves as it is, issue
// 17) are, byte for byte, the records a restore folds from the event log
// into an empty store. A live fold that skipped a write the restored fold
// makes (say the fold moved LastEventAt for a replay) would make a
// member's view depend on whether it decided or restored a key.
func TestLiveAndRestoredFoldsStoreTheSameBytes(t *testing.T) {
	e := newEnv(t, 3)
	l := newLedger(t)
	ex := e.startInproc(registry(t, l.toolsYAML("")), nil)
	c := e.client()
	args := map[string]any{"order": "o-1", "amount": 120}
	for _, in := range []wire.Intent{
		{Tool: "t.ok", Key: "ok-1", Args: args},
		{Tool: "t.ok", Key: "ok-1", Args: args},                              // replayed
		{Tool: "t.ok", Key: "ok-1", Args: map[string]any{"order": "o-2"}},    // conflicted
		{Tool: "t.fail", Key: "fail-1", Args: map[string]any{}},              // failed
		{Tool: "t.fail", Key: "fail-1", Args: map[string]any{}},              // replayed
		{Tool: "t.refused", Key: "nx-1", Args: map[string]any{}},             // not_executed
		{Tool: "t.refused", Key: "nx-1", Args: map[string]any{}},             // a second attempt
		{Tool: "t.ok", Key: "ok-2", Args: map[string]any{"n": 1}},            // settled
		{Tool: "t.ok", Key: "ok-2", Args: map[string]any{"n": 1}},            // replayed
		{Tool: "t.ok", Key: "ok-2", Args: map[string]any{"n": 1}},            // replayed again
		{Tool: "t.ok", Key: "ok-2", Args: map[string]any{"n": 2, "x": true}}, // conflicted
	} {
		e.call(c, in, 30*time.Second)
	}
	if r := e.callPending(c, wire.Intent{Tool: "t.hang", Key: "doubt-1", Args: map[string]any{}}, 5*time.Second); r.Error == nil || r.Error.Code != "in_doubt" {
		t.Fatalf("hanging call: %+v", r)
	}
	e.callPending(c, wire.Intent{Tool: "t.hang", Key: "doubt-1", Args: map[string]any{}}, 3*time.Second) // waits
	ex.stop()

	live := storedRecords(t, filepath.Join(ex.dir, "state"))
	restoredDir := t.TempDir()
	st, err := state.Open(restoredDir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for p := range e.partitions {
		if _, err := eventlog.RestoreInto(ctx, st, e.adm, p, eventlog.RestoreOptions{Seeds: brokers, Topic: e.names.Events,
			PartitionOf: func(tenant, key string) int32 { return wire.Partition(wire.RoutingKey(tenant, key), e.partitions) }}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	restored := storedRecords(t, restoredDir)
	if len(live) != 5 || len(restored) != len(live) {
		t.Fatalf("live view holds %d records, restored %d; want 5 each", len(live), len(restored))
	}
	for k, lb := range live {
		if rb := restored[k]; !bytes.Equal(lb, rb) {
			t.Errorf("record %s: live fold and restored fold differ:\n live     %x\n restored %x", k, lb, rb)
		}
	}
}

// storedRecords reads every record of the store in dir, encoded as the
// store encodes them (msgpack of saga.Record).
func storedRecords(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[string][]byte{}
	if _, err := st.ScanRecords("", "", math.MaxInt, func(rec *saga.Record) error {
		b, err := msgpack.Marshal(rec)
		out[rec.Tenant+"/"+rec.Key] = b
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return out
}
