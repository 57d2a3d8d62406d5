package txn

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/state"
)

// The member's own aborts must have no holes: a transaction it redoes and
// does not record can have a hanging remnant that a repair later commits
// (its intents answered twice).

// TestOwnAbortRecordedWhenTheEndIsInterruptedDuringTheFlush: the group
// interrupts the end while the records are still being flushed, so the
// client's producer id is read on a context already cancelled (or, after
// a flush as long as the transaction timeout, expired). The transaction
// is still recorded, under the producer id and epoch its records carry.
func TestOwnAbortRecordedWhenTheEndIsInterruptedDuringTheFlush(t *testing.T) {
	c := newCluster(t)
	s := newSession(t, c, "interrupted")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produceInputs(t, c, 3)
	polled := pollN(ctx, t, s, 3)
	var interrupted atomic.Bool
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if !interrupted.Swap(true) {
			s.Interrupt() // the end's context is set up before the flush
		}
		return nil, nil, false
	})
	b := &Transaction{Records: []*kgo.Record{event("started")}, Touched: map[int32]bool{0: true}, Polled: polled}
	out, err := s.Commit(ctx, b, func() {})
	if !interrupted.Load() {
		t.Fatal("no produce was seen: the test did not exercise the fault")
	}
	if err != nil || out != Unknown {
		t.Fatalf("Commit: %v, %v; want Unknown (the end was interrupted)", out, err)
	}
	r := b.Records[0]
	if !s.aborted.aborted(r.ProducerID, r.ProducerEpoch) {
		t.Fatalf("the interrupted transaction (producer %d epoch %d, as its records carry) is not among the member's own aborts",
			r.ProducerID, r.ProducerEpoch)
	}
}

// TestOwnAbortRecordedForProducerIDZero: producer id 0 is the first a
// cluster hands out, and a transaction of it is recorded like any other.
func TestOwnAbortRecordedForProducerIDZero(t *testing.T) {
	st, err := state.Open(t.TempDir(), state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := loadAbortedTxns(st, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := a.add(txnKey{pid: 0, epoch: 0}, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !a.aborted(0, 0) {
		t.Fatal("the transaction of producer 0, epoch 0 was not recorded")
	}
}

// TestOwnAbortThatCannotBeWrittenStopsTheMember: the store fails the
// write of the own-abort record. The member must not go on to redo the
// transaction with nothing to keep a remnant of it hidden: the commit
// fails with ErrFatal.
func TestOwnAbortThatCannotBeWrittenStopsTheMember(t *testing.T) {
	c := newCluster(t)
	var fail atomic.Bool
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if fail.Load() && op == errorfs.OpFileWrite && strings.HasSuffix(path, ".log") {
			return errorfs.ErrInjected
		}
		return nil
	}))
	s := newSessionOn(t, c, "unwritable", state.Options{FS: fs})
	b := &Transaction{Records: []*kgo.Record{event("a")}, Touched: map[int32]bool{0: true}}
	b.Fail(event("too large"), kerr.MessageTooLarge)
	fail.Store(true)
	out, err := s.Commit(context.Background(), b, func() {})
	if !errors.Is(err, ErrFatal) {
		t.Fatalf("Commit: %v, %v; want ErrFatal (the own abort could not be written)", out, err)
	}
}

// newSessionOn is newSession with the store's options.
func newSessionOn(t *testing.T, c *kfake.Cluster, txnID string, so state.Options) *Session {
	t.Helper()
	st, err := state.Open(t.TempDir(), so)
	if err != nil {
		t.Fatal(err)
	}
	seeds := kgo.SeedBrokers(c.ListenAddrs()...)
	s, err := New(Config{
		Session: []kgo.Opt{seeds, kgo.TransactionalID(txnID), kgo.TransactionTimeout(10 * time.Second),
			kgo.ConsumerGroup("g-" + txnID), kgo.ConsumeTopics(names.Intents, names.Control),
			kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.RecordPartitioner(kgo.ManualPartitioner()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())},
		Markers: []kgo.Opt{seeds},
		Names:   names, Group: "g-" + txnID, TransactionTimeout: 10 * time.Second, BrokerOutage: 10 * time.Second,
		Store: st, Owned: func() []int32 { return []int32{0} },
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); _ = st.Close() })
	return s
}
