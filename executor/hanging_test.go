package executor

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Only a transaction still open on the partition and older than the age
// bound can be judged hanging; closed ones and young ones never are.
func TestHangingCandidates(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	ps := kadm.DescribedProducersTopics{"__consumer_offsets": {Topic: "__consumer_offsets", Partitions: kadm.DescribedProducersPartitions{
		0: {Partition: 0, ActiveProducers: kadm.DescribedProducers{
			1: {Topic: "__consumer_offsets", Partition: 0, ProducerID: 1, ProducerEpoch: 239, CoordinatorEpoch: 2, LastTimestamp: 1_000_000 - 61_000, CurrentTxnStartOffset: 1556},
			2: {Topic: "__consumer_offsets", Partition: 0, ProducerID: 2, LastTimestamp: 1_000_000 - 61_000, CurrentTxnStartOffset: -1},
			3: {Topic: "__consumer_offsets", Partition: 0, ProducerID: 3, LastTimestamp: 1_000_000 - 5_000, CurrentTxnStartOffset: 1600},
		}},
	}}}
	got := hangingCandidates(ps, now, time.Minute)
	if len(got) != 1 {
		t.Fatalf("candidates %+v, want only producer 1", got)
	}
	c := got[0]
	if c.producerID != 1 || c.producerEpoch != 239 || c.coordinatorEpoch != 2 || c.topic != "__consumer_offsets" || c.partition != 0 {
		t.Fatalf("candidate %+v", c)
	}
}

// A hanging transaction is committed unless this member wrote it and saw
// it fail; the memory of own transactions is bounded.
func TestOwnTxnsOutcome(t *testing.T) {
	var o ownTxns
	o.record(txnKey{7, 1}, true)
	o.record(txnKey{7, 2}, false)
	if !o.outcome(7, 1) || o.outcome(7, 2) || !o.outcome(8, 1) {
		t.Fatalf("outcomes: own committed %v, own failed %v, other %v", o.outcome(7, 1), o.outcome(7, 2), o.outcome(8, 1))
	}
	for i := 0; i < ownTxnsKept+10; i++ {
		o.record(txnKey{9, int16(i % 30000)}, false)
	}
	if len(o.seen) != ownTxnsKept || len(o.order) != ownTxnsKept || !o.outcome(7, 2) {
		t.Fatalf("kept %d/%d entries; the oldest must be forgotten (then committed)", len(o.seen), len(o.order))
	}
}
