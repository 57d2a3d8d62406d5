package txn

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/atmostonce/toolexec/internal/testing/kfakeresp"
)

// The offsets a member moves its consumer to after an unconfirmed end are
// stable: an offset commit whose transaction is not decided yet is not
// read as "the offsets did not move" (which redoes the tick and answers
// its intents a second time), the fetch waits until it is decided.
func TestFetchCommittedWaitsForAPendingOffsetCommit(t *testing.T) {
	c := newCluster(t)
	s := newSession(t, c, "stable")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.MaxVersions(kversion.V3_6_0())) // TxnOffsetCommit by topic name
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	produceInputs(t, c, 1)
	pollN(ctx, t, s, 1) // the member is in its group
	pending := pendingOffsetCommit(ctx, t, cl, "g-stable", 7)

	if set, err := s.fetchCommitted(); err == nil {
		t.Fatalf("offsets %v read while their commit was pending: the tick would be redone", set)
	} else if !errors.Is(err, kerr.UnstableOffsetCommit) {
		t.Fatalf("fetch: %v, want UNSTABLE_OFFSET_COMMIT", err)
	}
	end := kmsg.NewPtrEndTxnRequest()
	end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = "previous-tick", pending.ProducerID, pending.ProducerEpoch, true
	if resp, err := end.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("EndTxn: %v %v", resp, err)
	}
	set, err := s.fetchCommitted()
	if err != nil || set[names.Intents][0].Offset != 7 {
		t.Fatalf("after the commit: %v, %v; want intents/0 at 7", set, err)
	}
}

// pendingOffsetCommit opens a transaction that commits group's offset of
// intents/0 to at, and leaves it undecided.
func pendingOffsetCommit(ctx context.Context, t *testing.T, cl *kgo.Client, group string, at int64) *kmsg.InitProducerIDResponse {
	t.Helper()
	init := kmsg.NewPtrInitProducerIDRequest()
	txnID := "previous-tick"
	init.TransactionalID, init.TransactionTimeoutMillis = &txnID, 60000
	pid, err := init.RequestWith(ctx, cl)
	if err != nil || pid.ErrorCode != 0 {
		t.Fatalf("InitProducerID: %v %v", pid, err)
	}
	add := kmsg.NewPtrAddOffsetsToTxnRequest()
	add.TransactionalID, add.ProducerID, add.ProducerEpoch, add.Group = txnID, pid.ProducerID, pid.ProducerEpoch, group
	if resp, err := add.RequestWith(ctx, cl); err != nil || resp.ErrorCode != 0 {
		t.Fatalf("AddOffsetsToTxn: %v %v", resp, err)
	}
	commit := kmsg.NewPtrTxnOffsetCommitRequest()
	commit.TransactionalID, commit.Group, commit.ProducerID, commit.ProducerEpoch, commit.Generation = txnID, group, pid.ProducerID, pid.ProducerEpoch, -1
	tp := kmsg.NewTxnOffsetCommitRequestTopic()
	tp.Topic = names.Intents
	p := kmsg.NewTxnOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset, p.LeaderEpoch = 0, at, -1
	tp.Partitions = append(tp.Partitions, p)
	commit.Topics = append(commit.Topics, tp)
	resp, err := commit.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if rp.ErrorCode != 0 {
				t.Fatalf("TxnOffsetCommit: %v", kerr.ErrorForCode(rp.ErrorCode))
			}
		}
	}
	return pid
}

// TestUnknownEndWithOffsetsCommittedAndRecordsAborted: the end of a
// transaction fails, its records are aborted (the member's own abort
// after the failure), and yet the group's stable offsets show its offset
// commit (a coordinator that committed __consumer_offsets alone from a
// PrepareCommit its partition then lost). The transaction wrote only a
// forwarded intent, no event. The consumer must go back to the
// transaction's inputs, not to the offsets: at the offsets' word the
// forwarded intent was lost, never answered.
func TestUnknownEndWithOffsetsCommittedAndRecordsAborted(t *testing.T) {
	c := newCluster(t)
	s := newSession(t, c, "split")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produceInputs(t, c, 6)
	polled := pollN(ctx, t, s, 3)
	if last := polled[len(polled)-1].Offset; last != 2 {
		t.Fatalf("polled up to offset %d, want 2", last)
	}
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if !req.(*kmsg.EndTxnRequest).Commit {
			return nil, nil, false
		}
		// The answer never comes: the connection is cut, and the end is
		// interrupted before a retry reaches the broker.
		c.KeepControl()
		s.Interrupt()
		return nil, errors.New("connection cut"), true
	})
	c.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl() // the group's, and the member's own after the failed end
		return offsetsAt(req.(*kmsg.OffsetFetchRequest), 3), nil, true
	})
	forward := &kgo.Record{Topic: names.Intents, Partition: 0, Value: []byte("forwarded")}
	b := &Transaction{Records: []*kgo.Record{forward}, Polled: polled}
	out, err := s.Commit(ctx, b, func() {})
	if err != nil || out != Unknown {
		t.Fatalf("Commit: %v, %v; want Unknown", out, err)
	}
	if !s.aborted.aborted(b.txn.pid, b.txn.epoch) {
		t.Fatalf("transaction %+v not recorded as aborted", b.txn)
	}
	again := pollN(ctx, t, s, 1)
	if again[0].Offset != 0 {
		t.Fatalf("after offsets committed over aborted records the consumer polled offset %d, want the first input (0)", again[0].Offset)
	}
}

// offsetsAt answers an offset fetch (v8 and later: by group) with every
// partition asked for at.
func offsetsAt(req *kmsg.OffsetFetchRequest, at int64) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	resp.Version = req.Version
	for _, g := range req.Groups {
		rg := kmsg.NewOffsetFetchResponseGroup()
		rg.Group = g.Group
		for _, t := range g.Topics {
			rt := kmsg.NewOffsetFetchResponseGroupTopic()
			rt.Topic, rt.TopicID = t.Topic, t.TopicID
			for _, p := range t.Partitions {
				rp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p, at, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			rg.Topics = append(rg.Topics, rt)
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}

// TestUnknownEndWithRecordsCommittedAndOffsetsAborted: the mirror of the
// split above. The transaction's records commit (its EndTxn is applied,
// and its answer lost), while the group's offsets show the inputs not
// committed (a coordinator that wrote COMMIT on the data partitions from
// a PrepareCommit its partition then lost, and whose successor aborted
// the offsets). Taken at the offsets' word the member redid the tick: its
// inputs were decided again against a view that holds its events, so a
// replay was answered twice, and its calls, never made, left their keys
// in doubt. The markers over its own records decide: it committed, the
// calls may go, and the consumer moves past its inputs.
func TestUnknownEndWithRecordsCommittedAndOffsetsAborted(t *testing.T) {
	ip := kfakeresp.NewInterposer()
	c := newClusterWith(t, kfake.ListenFn(ip.Listen))
	s := newSession(t, c, "split2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produceInputs(t, c, 3)
	polled := pollN(ctx, t, s, 3)
	var cut atomic.Bool
	ip.Set(func(r kfakeresp.Request) kfakeresp.Verdict {
		if end, ok := r.Req.(*kmsg.EndTxnRequest); ok && end.Commit && cut.CompareAndSwap(false, true) {
			s.Interrupt() // no retry reaches the broker
			return kfakeresp.Verdict{Way: kfakeresp.Lost}
		}
		return kfakeresp.Verdict{}
	})
	c.ControlKey(int16(kmsg.OffsetFetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return offsetsAt(req.(*kmsg.OffsetFetchRequest), 0), nil, true
	})
	b := &Transaction{Records: []*kgo.Record{event("started")}, Touched: map[int32]bool{0: true},
		Polled: polled, Confirm: map[int32]bool{0: true}}
	out, err := s.Commit(ctx, b, func() {})
	if !cut.Load() {
		t.Fatal("no EndTxn commit lost its answer: the test did not exercise the fault")
	}
	if got := committedEvents(t, c); len(got) != 1 || got[0] != "started" {
		t.Fatalf("committed events %q: the records did not commit", got)
	}
	if err != nil || out != Committed {
		t.Errorf("Commit: %v, %v; want Committed (its records are seen committed)", out, err)
	}
	if s.aborted.aborted(b.txn.pid, b.txn.epoch) {
		t.Errorf("a transaction whose records committed (%+v) is kept among the member's own aborts", b.txn)
	}
	produceInputs(t, c, 1)
	again := pollN(ctx, t, s, 1)
	if again[0].Offset != 3 {
		t.Fatalf("after records committed behind offsets that did not move the consumer polled offset %d, want 3 (past the inputs)", again[0].Offset)
	}
}
