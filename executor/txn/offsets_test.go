package txn

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
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
