package txn

import (
	"context"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/topics"
)

// The session driven alone against kfake, without a member: its requests
// are watched, and answered where a broker's fault is wanted, with
// kfake's request control (Cluster.ControlKey).

var names = topics.NamesWithPrefix("tool.")

func newCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	return newClusterWith(t)
}

// newClusterWith is newCluster with more of kfake's options.
func newClusterWith(t *testing.T, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	opts = append([]kfake.Opt{kfake.NumBrokers(1),
		kfake.SeedTopics(1, names.Intents, names.Control, names.Events, names.Results, names.DeadLetter)}, opts...)
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func newSession(t *testing.T, c *kfake.Cluster, txnID string) *Session {
	t.Helper()
	return newSessionOn(t, c, txnID, state.Options{})
}

func event(v string) *kgo.Record {
	return &kgo.Record{Topic: names.Events, Partition: 0, Value: []byte(v)}
}

// committedEvents reads the events partition with read_committed
// isolation until want records came or a second passed after the last.
func committedEvents(t *testing.T, c *kfake.Cluster) []string {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ConsumeTopics(names.Events),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := cl.PollFetches(ctx)
		cancel()
		if fs.NumRecords() == 0 {
			return got
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
}

// watch counts the requests of key that pass, and keeps the last.
type watch struct {
	mu   sync.Mutex
	n    int
	last kmsg.Request
}

func watchKey(c *kfake.Cluster, key kmsg.Key) *watch {
	w := &watch{}
	c.ControlKey(int16(key), func(req kmsg.Request) (kmsg.Response, error, bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.n++
		w.last = req
		return nil, nil, false // observed, then handled by the cluster
	})
	return w
}

func (w *watch) get() (int, kmsg.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n, w.last
}

// TestSessionCommit: a batch commits with a commit marker, its records
// become visible, the confirmation reads the events partition before
// Commit reports Committed, and the checkpoints follow the offsets.
func TestSessionCommit(t *testing.T) {
	c := newCluster(t)
	ends, markerReads := watchKey(c, kmsg.EndTxn), &watch{}
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		if isMarkerFetch(req.(*kmsg.FetchRequest)) {
			markerReads.mu.Lock()
			markerReads.n++
			markerReads.mu.Unlock()
		}
		return nil, nil, false
	})
	s := newSession(t, c, "commit")
	b := &Transaction{Records: []*kgo.Record{event("a"), event("b")}, Touched: map[int32]bool{0: true}, Confirm: map[int32]bool{0: true}}
	out, err := s.Commit(context.Background(), b, func() {})
	if err != nil || out != Committed {
		t.Fatalf("Commit: %v, %v; want Committed", out, err)
	}
	if n, req := ends.get(); n != 1 || !req.(*kmsg.EndTxnRequest).Commit {
		t.Fatalf("%d EndTxn requests, last %+v: want one commit", n, req)
	}
	if n, _ := markerReads.get(); n == 0 {
		t.Fatal("Committed without a read of the events partition's markers")
	}
	if got := committedEvents(t, c); len(got) != 2 || got[0] != "a" || got[1] != "b" {
		t.Fatalf("committed events %q, want a, b", got)
	}
	if cp := b.Checkpoints(); cp[0] != 2 {
		t.Fatalf("checkpoints %v, want partition 0 at 2", cp)
	}
}

// TestSessionRetriesAConcurrentTransactionsProduceQuickly: a produce
// refused with CONCURRENT_TRANSACTIONS (the previous transaction's markers
// not yet written) is retried after a metadata refresh, and the session's
// client allows that refresh after a tenth of a second, where franz-go's
// default minimum age held every write of the member for up to 5 s. The
// option is asserted, not the time (no timed tests): the commit after
// one refused produce took 5.5 s without it and 1.6 s with it.
func TestSessionRetriesAConcurrentTransactionsProduceQuickly(t *testing.T) {
	c := newCluster(t)
	s := newSession(t, c, "concurrent")
	if age := s.Client().OptValue(kgo.MetadataMinAge); age != retryMetadataAge {
		t.Fatalf("the session's metadata min age is %v, want %v", age, retryMetadataAge)
	}
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		return concurrentTransactions(req.(*kmsg.ProduceRequest)), nil, true // the first produce only
	})
	b := &Transaction{Records: []*kgo.Record{event("a")}, Touched: map[int32]bool{0: true}, Confirm: map[int32]bool{0: true}}
	out, err := s.Commit(context.Background(), b, func() {})
	if err != nil || out != Committed {
		t.Fatalf("Commit: %v, %v; want Committed", out, err)
	}
	if got := committedEvents(t, c); len(got) != 1 || got[0] != "a" {
		t.Fatalf("committed events %q, want a", got)
	}
}

// concurrentTransactions answers every partition of req with
// CONCURRENT_TRANSACTIONS.
func concurrentTransactions(req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewProduceResponseTopic()
		t.Topic, t.TopicID = rt.Topic, rt.TopicID
		for _, rp := range rt.Partitions {
			p := kmsg.NewProduceResponseTopicPartition()
			p.Partition, p.ErrorCode = rp.Partition, kerr.ConcurrentTransactions.Code
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// TestSessionAbortRecordsItsOwnAbort: a batch with a record that cannot
// be produced ends with an abort marker, nothing of it is visible, and the
// member keeps the transaction among its own aborts (a hanging remnant of
// it is then closed with an abort: see TestSessionClosesHangingTransactions).
func TestSessionAbortRecordsItsOwnAbort(t *testing.T) {
	c := newCluster(t)
	ends := watchKey(c, kmsg.EndTxn)
	s := newSession(t, c, "abort")
	b := &Transaction{Records: []*kgo.Record{event("a")}, Touched: map[int32]bool{0: true}}
	tooLarge := event("too large")
	b.Fail(tooLarge, kerr.MessageTooLarge)
	out, err := s.Commit(context.Background(), b, func() {})
	if err != nil || out != Aborted {
		t.Fatalf("Commit: %v, %v; want Aborted", out, err)
	}
	if n, req := ends.get(); n != 1 || req.(*kmsg.EndTxnRequest).Commit {
		t.Fatalf("%d EndTxn requests, last %+v: want one abort", n, req)
	}
	if f := b.Failures(); len(f) != 1 || f[0].Record != tooLarge {
		t.Fatalf("failures %+v, want the record too large", f)
	}
	if !b.pidKnown || !s.aborted.aborted(b.txn.pid, b.txn.epoch) {
		t.Fatalf("transaction %+v (known %v) not recorded as aborted", b.txn, b.pidKnown)
	}
	if got := committedEvents(t, c); len(got) != 0 {
		t.Fatalf("an aborted transaction's events are visible: %q", got)
	}
}

// TestSessionConfirmationSeesAnAbortBehindACommit: EndTxn reports a
// commit, but the events partition answers the confirmation with an
// abort of this producer over the batch's events (a COMMIT marker lost
// across a broker kill). Commit reports Unconfirmed, so no call is made,
// and the consumer goes back to the batch's inputs although the group's
// offsets moved past them.
func TestSessionConfirmationSeesAnAbortBehindACommit(t *testing.T) {
	c := newCluster(t)
	s := newSession(t, c, "unconfirmed")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produceInputs(t, c, 3)
	polled := pollN(ctx, t, s, 3)
	pid, _, err := s.Client().ProducerID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.ControlKey(int16(kmsg.Fetch), func(req kmsg.Request) (kmsg.Response, error, bool) {
		fr := req.(*kmsg.FetchRequest)
		if !isMarkerFetch(fr) {
			return nil, nil, false
		}
		c.KeepControl()
		return abortedFetch(fr, pid), nil, true
	})
	b := &Transaction{Records: []*kgo.Record{event("started")}, Touched: map[int32]bool{0: true},
		Polled: polled, Confirm: map[int32]bool{0: true}}
	out, err := s.Commit(ctx, b, func() {})
	if err != nil || out != Unconfirmed {
		t.Fatalf("Commit: %v, %v; want Unconfirmed", out, err)
	}
	pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
	defer pcancel()
	again := pollN(pctx, t, s, 1)
	if again[0].Topic != names.Intents || again[0].Offset != 0 {
		t.Fatalf("after an abort behind a commit the consumer polled %s/%d@%d, want the batch's first input (offset 0)",
			again[0].Topic, again[0].Partition, again[0].Offset)
	}
}

// TestSessionFence: a transaction that polled nothing from partition 0
// but writes its events still commits partition 0's offset (at the
// committed one), so the broker checks its generation; a transaction whose
// offset commit the broker refuses for a stale generation does not commit.
func TestSessionFence(t *testing.T) {
	c := newCluster(t)
	s := newSession(t, c, "fence")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	produceInputs(t, c, 3)
	polled := pollN(ctx, t, s, 3)
	first := &Transaction{Records: []*kgo.Record{event("first")}, Touched: map[int32]bool{0: true}, Polled: polled}
	if out, err := s.Commit(ctx, first, func() {}); err != nil || out != Committed {
		t.Fatalf("first Commit: %v, %v", out, err)
	}

	commits := watchKey(c, kmsg.TxnOffsetCommit)
	outcomes := &Transaction{Records: []*kgo.Record{event("outcomes only")}, Touched: map[int32]bool{0: true}}
	if out, err := s.Commit(ctx, outcomes, func() {}); err != nil || out != Committed {
		t.Fatalf("second Commit: %v, %v", out, err)
	}
	n, req := commits.get()
	if n != 1 {
		t.Fatalf("%d offset commits in a transaction that polled nothing, want 1 (the fence)", n)
	}
	tc := req.(*kmsg.TxnOffsetCommitRequest)
	if len(tc.Topics) != 1 || tc.Topics[0].Topic != names.Intents || len(tc.Topics[0].Partitions) != 1 ||
		tc.Topics[0].Partitions[0].Partition != 0 || tc.Topics[0].Partitions[0].Offset != 3 {
		t.Fatalf("fence %+v, want %s/0 at the committed offset 3", tc.Topics, names.Intents)
	}

	c.ControlKey(int16(kmsg.TxnOffsetCommit), func(req kmsg.Request) (kmsg.Response, error, bool) {
		return staleGeneration(req.(*kmsg.TxnOffsetCommitRequest)), nil, true
	})
	zombie := &Transaction{Records: []*kgo.Record{event("zombie")}, Touched: map[int32]bool{0: true}}
	if out, err := s.Commit(ctx, zombie, func() {}); err != nil || out == Committed {
		t.Fatalf("a refused generation: %v, %v; want no commit", out, err)
	}
	if got := committedEvents(t, c); len(got) != 2 || got[1] != "outcomes only" {
		t.Fatalf("committed events %q, want first and outcomes only (not the zombie's)", got)
	}
}

// TestSessionClosesHangingTransactions: transactions open on a partition
// for long and unknown to their coordinator are closed, one the member
// recorded as its own abort with an abort marker, one of unknown outcome
// with a commit marker; a young one is left alone, and a second look
// within stalledAfter does not ask again.
func TestSessionClosesHangingTransactions(t *testing.T) {
	c := newCluster(t)
	s := newSession(t, c, "hanging")
	age := s.hangingAge()
	now := time.Now()
	if err := s.aborted.add(txnKey{pid: 7, epoch: 3}, now); err != nil {
		t.Fatal(err)
	}
	open := []openProducer{
		{pid: 7, epoch: 3, since: now.Add(-2 * age)},                                  // its own abort: abort marker
		{pid: 8, epoch: 1, since: now.Add(-time.Duration(unknownHangingAge+1) * age)}, // unknown, old: commit marker
		{pid: 9, epoch: 1, since: now.Add(-age - age/2)},                              // unknown, young: wait
	}
	describes := &watch{}
	c.ControlKey(int16(kmsg.DescribeProducers), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		describes.mu.Lock()
		describes.n++
		describes.mu.Unlock()
		return describeProducers(req.(*kmsg.DescribeProducersRequest), open), nil, true
	})
	var mu sync.Mutex
	written := map[int64]bool{} // producer id -> committed
	c.ControlKey(int16(kmsg.WriteTxnMarkers), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		defer mu.Unlock()
		wr := req.(*kmsg.WriteTxnMarkersRequest)
		for _, m := range wr.Markers {
			written[m.ProducerID] = m.Committed
		}
		return markersWritten(wr), nil, true
	})

	s.CheckHanging(context.Background())
	mu.Lock()
	got := markerKinds(written)
	mu.Unlock()
	if len(got) != 2 || got[7] != "abort" || got[8] != "commit" {
		t.Fatalf("markers written %v, want producer 7 aborted and 8 committed, 9 left alone", got)
	}
	var m dto.Metric
	if err := s.cfg.HangingCommitted.Write(&m); err != nil || m.GetCounter().GetValue() != 2 {
		t.Fatalf("%v hanging transactions counted closed (%v), want 2", m.GetCounter().GetValue(), err)
	}
	n, _ := describes.get()
	s.CheckHanging(context.Background())
	if again, _ := describes.get(); again != n {
		t.Fatalf("a second look within stalledAfter described the producers again (%d requests, then %d)", n, again)
	}
}

func markerKinds(written map[int64]bool) map[int64]string {
	out := map[int64]string{}
	for pid, commit := range written {
		out[pid] = "abort"
		if commit {
			out[pid] = "commit"
		}
	}
	return out
}

type openProducer struct {
	pid   int64
	epoch int32
	since time.Time
}

// describeProducers answers that the producers are open on the events
// partition 0, and that every other partition has none.
func describeProducers(req *kmsg.DescribeProducersRequest, open []openProducer) *kmsg.DescribeProducersResponse {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		t := kmsg.NewDescribeProducersResponseTopic()
		t.Topic = rt.Topic
		for _, p := range rt.Partitions {
			tp := kmsg.NewDescribeProducersResponseTopicPartition()
			tp.Partition = p
			if rt.Topic == names.Events && p == 0 {
				for _, o := range open {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastTimestamp, ap.CurrentTxnStartOffset = o.pid, o.epoch, o.since.UnixMilli(), 5
					tp.ActiveProducers = append(tp.ActiveProducers, ap)
				}
			}
			t.Partitions = append(t.Partitions, tp)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

func markersWritten(req *kmsg.WriteTxnMarkersRequest) *kmsg.WriteTxnMarkersResponse {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, mt := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = mt.Topic
			for _, p := range mt.Partitions {
				rp := kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				rt.Partitions = append(rt.Partitions, rp)
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	return resp
}

// isMarkerFetch tells the confirmation's fetches (confirm.go: one
// partition, one byte) from the consumer's.
func isMarkerFetch(req *kmsg.FetchRequest) bool {
	return len(req.Topics) == 1 && len(req.Topics[0].Partitions) == 1 &&
		req.Topics[0].Partitions[0].PartitionMaxBytes == 1
}

// abortedFetch answers a marker fetch with a stable offset past the
// requested offset and an abort of pid that began at it.
func abortedFetch(req *kmsg.FetchRequest, pid int64) *kmsg.FetchResponse {
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	rt := kmsg.NewFetchResponseTopic()
	rt.Topic, rt.TopicID = req.Topics[0].Topic, req.Topics[0].TopicID
	rp := kmsg.NewFetchResponseTopicPartition()
	from := req.Topics[0].Partitions[0].FetchOffset
	rp.Partition, rp.HighWatermark, rp.LastStableOffset = req.Topics[0].Partitions[0].Partition, from+2, from+2
	at := kmsg.NewFetchResponseTopicPartitionAbortedTransaction()
	at.ProducerID, at.FirstOffset = pid, from
	rp.AbortedTransactions = append(rp.AbortedTransactions, at)
	rp.RecordBatches = []byte{0} // a batch came back: the aborted list speaks for it
	rt.Partitions = append(rt.Partitions, rp)
	resp.Topics = append(resp.Topics, rt)
	return resp
}

// staleGeneration refuses every offset of the commit as a zombie's.
func staleGeneration(req *kmsg.TxnOffsetCommitRequest) *kmsg.TxnOffsetCommitResponse {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition, rp.ErrorCode = p.Partition, kerr.IllegalGeneration.Code
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// produceInputs writes n records to intents partition 0.
func produceInputs(t *testing.T, c *kfake.Cluster, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for i := range n {
		r := &kgo.Record{Topic: names.Intents, Partition: 0, Value: []byte{byte(i)}}
		if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// pollN polls the session's client until it has n records.
func pollN(ctx context.Context, t *testing.T, s *Session, n int) []*kgo.Record {
	t.Helper()
	var out []*kgo.Record
	for len(out) < n {
		if ctx.Err() != nil {
			t.Fatalf("polled %d records, want %d", len(out), n)
		}
		fs := s.Client().PollRecords(ctx, n-len(out))
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}
