package executor

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/wire"
)

// factMember is what keepFacts and the courier need of a member: its
// store, metrics, logger and courier, on a kfake broker of its own.
type factMember struct {
	e       *Executor
	dir     string
	seeds   []string
	control string
}

func newFactMember(t *testing.T, dir string, seeds []string) *factMember {
	t.Helper()
	st, err := state.Open(filepath.Join(dir, "state"), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := newMetrics(nil)
	c, err := newCourier(st, "tool.control", 4, log, m.Facts, []kgo.Opt{kgo.SeedBrokers(seeds...)})
	if err != nil {
		t.Fatal(err)
	}
	e := &Executor{cfg: Config{Logger: log, Now: time.Now}, m: m, store: st, courier: c}
	return &factMember{e: e, dir: dir, seeds: seeds, control: "tool.control"}
}

func (f *factMember) close() { f.e.courier.close(); _ = f.e.store.Close() }

func newFactBroker(t *testing.T) []string {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, "tool.control"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.ListenAddrs()
}

// lostCompletion is a completion of an older epoch that carries a fact.
func lostCompletion(key string, st saga.Status) partition.Completion {
	return partition.Completion{
		Call:    partition.Call{Call: saga.Call{Kind: saga.CallOriginal, Tenant: "acme", Key: key, Tool: "pay", CallID: "i-" + key, DownstreamKey: "tk2_" + key}, P: 0, Epoch: 1},
		Outcome: saga.Completion{CallID: "i-" + key, Status: st, Result: []byte{0xa2, 'o', 'k'}},
	}
}

// controlRecords reads every record of the control topic.
func controlRecords(t *testing.T, seeds []string) []*wire.Intent {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics("tool.control"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var out []*wire.Intent
	for ctx.Err() == nil {
		cl.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
			in, rej := wire.DecodeIntent(r.Value, r.Key, wire.FromControl)
			if rej != nil {
				t.Fatalf("a fact the owner cannot read: %+v", rej)
			}
			if p := wire.Partition(string(r.Key), 4); p != r.Partition {
				t.Errorf("%s on partition %d, its owner is %d", r.Key, r.Partition, p)
			}
			out = append(out, in)
		})
	}
	return out
}

func heldFacts(t *testing.T, st *state.Store) []string {
	t.Helper()
	var keys []string
	if err := st.ScanAux(factPrefix, 1000, func(k, v []byte) error {
		f, err := decodeFact(v)
		if err != nil {
			return err
		}
		keys = append(keys, f.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

// Facts are kept on the member's disk until the broker has them: across a
// restart, each is delivered once, as a resolve naming its call and
// downstream key, and an unknown outcome or a read is no fact.
func TestFactsKeptAcrossARestartAndDeliveredOnce(t *testing.T) {
	dir := t.TempDir()
	down := newFactMember(t, dir, []string{"127.0.0.1:1"}) // no broker: nothing can be delivered
	lost := []partition.Completion{lostCompletion("k1", saga.StatusSucceeded), lostCompletion("k2", saga.StatusFailed),
		lostCompletion("k3", saga.StatusUnknown)}
	read := lostCompletion("k4", saga.StatusSucceeded)
	read.Call.Kind = saga.CallReadOnly
	if err := down.e.keepLost(append(lost, read)); err != nil {
		t.Fatal(err)
	}
	unsent := partition.Call{Call: saga.Call{Kind: saga.CallCompensation, Tenant: "acme", Key: "k5", Tool: "refund", CallID: "c-k5", DownstreamKey: "tk2_c5"}}
	if err := down.e.keepUnsent([]partition.Call{unsent}); err != nil {
		t.Fatal(err)
	}
	down.close() // the member stops before the broker could take them

	seeds := newFactBroker(t)
	up := newFactMember(t, dir, seeds)
	defer up.close()
	if got := heldFacts(t, up.e.store); !slices.Equal(got, []string{"k1", "k2", "k5"}) {
		t.Fatalf("facts kept across the restart: %v, want k1, k2, k5", got)
	}
	for i := 0; i < 2; i++ { // the second pass finds nothing left to send
		if _, err := up.e.courier.deliver(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := heldFacts(t, up.e.store); len(got) != 0 {
		t.Fatalf("facts still held after their delivery: %v", got)
	}
	got := controlRecords(t, seeds)
	if len(got) != 3 {
		t.Fatalf("%d facts on the control topic, want 3 (each once): %+v", len(got), got)
	}
	want := map[string]string{"k1": codes.StatusSucceeded, "k2": codes.StatusFailed, "k5": codes.StatusNotExecuted}
	for _, in := range got {
		f := fact{Tenant: in.Tenant, Key: in.Key, CallID: in.CallID, DK: in.DownstreamKey, Compensation: in.Key == "k5", Status: mustStatus(t, in.Outcome)}
		switch {
		case in.Type != wire.TypeResolve || in.By != factBy || in.Outcome != want[in.Key] || in.CallID == "" || in.DownstreamKey == "":
			t.Errorf("fact of %s: %+v", in.Key, in)
		case in.ID != factID(&f):
			t.Errorf("fact of %s has id %s, want the fact's own %s", in.Key, in.ID, factID(&f))
		case in.Key == "k5" && (in.Error == nil || in.Error.Code != codes.ErrNotSent):
			t.Errorf("unsent fact: %+v", in.Error)
		}
	}
}

func mustStatus(t *testing.T, s string) saga.Status {
	t.Helper()
	if s == codes.StatusCompensated {
		return saga.StatusSucceeded
	}
	st, ok := saga.ParseStatus(s)
	if !ok {
		t.Fatalf("status %q", s)
	}
	return st
}

// The broker's answers come in the order it acknowledged the records, not
// the order they were sent: a fact whose record failed stays held, and
// only those acknowledged are forgotten.
func TestCourierForgetsOnlyAcknowledgedFacts(t *testing.T) {
	f := newFactMember(t, t.TempDir(), []string{"127.0.0.1:1"})
	defer f.close()
	if err := f.e.keepLost([]partition.Completion{lostCompletion("k1", saga.StatusSucceeded), lostCompletion("k2", saga.StatusSucceeded),
		lostCompletion("k3", saga.StatusSucceeded)}); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("NOT_ENOUGH_REPLICAS")
	f.e.courier.produce = func(_ context.Context, rs ...*kgo.Record) kgo.ProduceResults {
		var out kgo.ProduceResults
		for i := len(rs) - 1; i >= 0; i-- { // acknowledged last to first
			var err error
			if string(rs[i].Key) == "acme/k1" {
				err = refused
			}
			out = append(out, kgo.ProduceResult{Record: rs[i], Err: err})
		}
		return out
	}
	if _, err := f.e.courier.deliver(context.Background()); !errors.Is(err, refused) {
		t.Fatalf("deliver: %v, want the refusal", err)
	}
	if got := heldFacts(t, f.e.store); !slices.Equal(got, []string{"k1"}) {
		t.Fatalf("facts held after k1 was refused: %v, want k1 alone", got)
	}
}
