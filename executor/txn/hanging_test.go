package txn

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/state"
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

// A transaction recorded as aborted is still known after the process
// restarts on the same data dir (a remnant is judged long after, often by
// the next process), and a record past its TTL is dropped.
func TestAbortedTxnsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	st, err := state.Open(dir, state.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	a, err := loadAbortedTxns(st, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.add(txnKey{7, 2}, now); err != nil {
		t.Fatal(err)
	}
	if err := a.add(txnKey{8, 1}, now.Add(-2*abortedTxnsTTL)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = state.Open(dir, state.Options{}); err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := loadAbortedTxns(st, now)
	if err != nil {
		t.Fatal(err)
	}
	if !b.aborted(7, 2) || b.aborted(7, 1) || b.aborted(8, 1) {
		t.Fatalf("after reopening: 7/2 %v (want true), 7/1 %v, expired 8/1 %v (want false)", b.aborted(7, 2), b.aborted(7, 1), b.aborted(8, 1))
	}
}

// A failed End was followed by a resync: the member went on as committed
// only if the group's offsets cover every offset the transaction tried to
// commit on a partition it still owns.
func TestActedCommitted(t *testing.T) {
	tried := map[string]map[int32]kgo.EpochOffset{"in": {0: {Offset: 10}, 1: {Offset: 5}}}
	owned := func(p int32) bool { return p == 0 }
	all := func(int32) bool { return true }
	cases := []struct {
		name      string
		committed map[string]map[int32]kgo.EpochOffset
		owned     func(int32) bool
		want      bool
	}{
		{"moved", map[string]map[int32]kgo.EpochOffset{"in": {0: {Offset: 10}, 1: {Offset: 5}}}, all, true},
		{"not moved", map[string]map[int32]kgo.EpochOffset{"in": {0: {Offset: 7}, 1: {Offset: 5}}}, all, false},
		{"no commit at all", map[string]map[int32]kgo.EpochOffset{}, all, false},
		{"unowned partition behind", map[string]map[int32]kgo.EpochOffset{"in": {0: {Offset: 12}, 1: {Offset: 1}}}, owned, true},
	}
	for _, c := range cases {
		if got := actedCommitted(tried, c.committed, c.owned); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// How a hanging remnant is closed. The case: producer 21008's transaction
// at epoch 50 stays open on four partitions after its writer was killed,
// while its coordinator has aborted it (last state CompleteAbort, epoch
// 51) without the markers landing; the intents were redone, so committing
// the remnant would answer them twice.
func TestCloseMarker(t *testing.T) {
	age := time.Minute // the hanging age: every candidate is at least this old
	now := time.UnixMilli(10_000_000)
	remnant := func(sinceAges int) openTxn {
		return openTxn{topic: "events", producerID: 21008, producerEpoch: 50, lastWrite: now.Add(-time.Duration(sinceAges) * age)}
	}
	coord := func(state string, epoch int16) kadm.DescribedTransaction {
		return kadm.DescribedTransaction{TxnID: "ex-1", ProducerID: 21008, ProducerEpoch: epoch, State: state}
	}
	const wait, commit, abort = "wait", "commit", "abort"
	cases := []struct {
		name       string
		since      int
		ownAborted bool
		coord      kadm.DescribedTransaction
		want       string
	}{
		{"coordinator aborted it (seed 2031)", 1, false, coord("CompleteAbort", 51), abort},
		{"writer recorded an abort", 1, true, kadm.DescribedTransaction{}, abort},
		{"still running at its coordinator", 10, false, coord("Ongoing", 50), wait},
		{"running, though the writer recorded an abort", 10, true, coord("PrepareAbort", 51), wait},
		{"a later transaction aborted: unknown, young", 1, false, coord("CompleteAbort", 52), wait},
		{"a later transaction aborted: unknown, old", 2, false, coord("CompleteAbort", 52), commit},
		{"committed at the next epoch: not taken as proof, young", 1, false, coord("CompleteCommit", 51), wait},
		{"committed at the next epoch, old", 2, false, coord("CompleteCommit", 51), commit},
		{"listed, not described (epoch unknown)", 2, false, coord("CompleteAbort", -1), commit},
		{"another producer id holds the transactional id", 2, false, kadm.DescribedTransaction{ProducerID: 9, ProducerEpoch: 51, State: "CompleteAbort"}, commit},
		{"no coordinator state", 1, false, kadm.DescribedTransaction{}, wait},
	}
	for _, c := range cases {
		commitIt, why := closeMarker(remnant(c.since), c.ownAborted, c.coord, now, age)
		got := wait
		switch {
		case why != "" && commitIt:
			got = commit
		case why != "":
			got = abort
		}
		if got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
