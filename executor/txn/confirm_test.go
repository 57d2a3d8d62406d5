package txn

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMarkerOf: a span is committed only once the stable offset has passed
// its last event and no abort of its producer covers it; aborts of other
// producers, and of this producer after the span, do not count.
func TestMarkerOf(t *testing.T) {
	abort := func(pid, first int64) kmsg.FetchResponseTopicPartitionAbortedTransaction {
		at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
		at.ProducerID, at.FirstOffset = pid, first
		return at
	}
	sp := span{first: 10, last: 12}
	cases := []struct {
		name   string
		lso    int64
		aborts []kmsg.FetchResponseTopicPartitionAbortedTransaction
		want   markerState
	}{
		{"stable offset below the span", 10, nil, markerPending},
		{"stable offset at the last event", 12, nil, markerPending},
		{"stable offset past the span", 13, nil, markerCommitted},
		{"its own abort from the span's start", 14, []kmsg.FetchResponseTopicPartitionAbortedTransaction{abort(7, 10)}, markerAborted},
		{"its own abort from before the span (the seed 20261204 shape)", 14, []kmsg.FetchResponseTopicPartitionAbortedTransaction{abort(7, 4)}, markerAborted},
		{"its own abort beginning at the span's last event", 14, []kmsg.FetchResponseTopicPartitionAbortedTransaction{abort(7, 12)}, markerAborted},
		{"another producer's abort", 14, []kmsg.FetchResponseTopicPartitionAbortedTransaction{abort(8, 10)}, markerCommitted},
		{"its own later transaction aborted", 20, []kmsg.FetchResponseTopicPartitionAbortedTransaction{abort(7, 14)}, markerCommitted},
	}
	for _, c := range cases {
		if got := markerOf(7, sp, c.lso, c.aborts); got != c.want {
			t.Errorf("%s: got %d, want %d", c.name, got, c.want)
		}
	}
}

// TestSpansOfFollowTheProducedOffsets: the confirmation reads from the
// first event the transaction wrote on a partition to its last, and only
// on the partitions asked for.
func TestSpansOfFollowTheProducedOffsets(t *testing.T) {
	tr := &Transaction{}
	promise := tr.promise("ev")
	for _, r := range []struct {
		topic string
		p     int32
		off   int64
	}{{"ev", 0, 5}, {"ev", 0, 6}, {"ev", 1, 40}, {"results", 0, 99}, {"ev", 0, 7}} {
		promise(&kgo.Record{Topic: r.topic, Partition: r.p, Offset: r.off}, nil)
	}
	got := tr.spansOf(map[int32]bool{0: true, 2: true})
	if len(got) != 1 || got[0] != (span{first: 5, last: 7}) {
		t.Fatalf("spans %v, want partition 0 from 5 to 7 only", got)
	}
}

// TestProducerOfABatch: the producer a batch's markers are judged by is
// the client's when it was read at the end, else the one its acknowledged
// records carry, and unknown before any record was acknowledged.
func TestProducerOfABatch(t *testing.T) {
	b := &Transaction{}
	promise := b.promise("ev", "in")
	if _, ok := b.producer(); ok {
		t.Fatal("a producer known before any record was acknowledged")
	}
	promise(&kgo.Record{Topic: "results", Partition: 0, Offset: 3, ProducerID: 9}, nil)
	if _, ok := b.producer(); ok {
		t.Fatal("a producer taken from a record of a topic whose spans are not kept")
	}
	promise(&kgo.Record{Topic: "in", Partition: 1, Offset: 4, ProducerID: 7}, nil)
	if pid, ok := b.producer(); !ok || pid != 7 {
		t.Fatalf("producer %d, %v; want the records' 7", pid, ok)
	}
	b.txn, b.pidKnown = txnKey{pid: 5}, true
	if pid, ok := b.producer(); !ok || pid != 5 {
		t.Fatalf("producer %d, %v; want the client's 5", pid, ok)
	}
}
