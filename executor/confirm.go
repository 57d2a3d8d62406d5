package executor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/executor/partition"
)

// The commit confirmation: a tick's calls are dispatched only once the
// events partitions that hold their started events show the transaction
// committed, not when EndTxn says so.
//
// Why: EndTxn succeeds once the coordinator has logged PrepareCommit; the
// markers on the data partitions come afterwards. Kafka 4.4 with
// transaction version 2 can lose the COMMIT marker on a partition across a
// hard broker kill and abort the started event later with the producer's
// next ABORT marker (docs/RELIABILITY.md). A call dispatched on EndTxn's
// word would then have run with no committed started event, and its
// intents would stay unanswered. So the member reads, with read_committed isolation, from the
// first event it wrote on each such partition: once the partition's last
// stable offset has passed its last event, the transaction's marker there
// is written, and the fetch's aborted-transaction list says whether it was
// an abort. Only ticks with calls wait (one fetch per such partition, at
// once, usually one round trip): a lost marker on a tick without calls loses answers or an
// outcome, which the reconciler and the clients' retries already cover.

// errCommitUnconfirmed: the transaction's markers were not seen in time,
// or were seen to abort what EndTxn reported committed.
var errCommitUnconfirmed = errors.New("executor: transaction reported committed, not confirmed on the events partitions")

// The pause between two looks at the markers doubles from the first to the
// max: they usually follow EndTxn within milliseconds.
const (
	confirmFirstBackoff = time.Millisecond
	confirmMaxBackoff   = 100 * time.Millisecond
)

// span is the offsets of the events one transaction wrote on a partition.
type span struct{ first, last int64 }

// markerState is what a partition shows of one transaction.
type markerState int

const (
	markerPending   markerState = iota // no marker yet, or the partition could not be read
	markerCommitted                    // the stable offset passed the span, no abort covers it
	markerAborted                      // an abort of the producer covers the span
)

// confirmation is the verdict on a tick whose EndTxn reported a commit.
type confirmation struct {
	aborted map[int32]bool // events partitions seen to abort the tick's events
	err     error          // nil: every partition with a started event committed
}

// confirmCalls waits until every events partition holding a started event
// of rd's calls shows tr's transaction committed. It gives up after the
// transaction timeout, or when the group needs the loop (the same cancel
// as the end's): the tick is then treated as an end of unknown outcome.
func (e *Executor) confirmCalls(ctx context.Context, calls []partition.Call, tr *txnRecords) confirmation {
	spans := tr.spansOf(callPartitions(calls))
	if len(spans) == 0 {
		return confirmation{}
	}
	start := time.Now()
	cctx, done := e.cancellableEnd(ctx)
	defer done()
	pid := tr.txn.pid
	if !tr.pidKnown {
		pid = anyProducer
	}
	aborted, err := e.awaitMarkers(cctx, pid, spans)
	e.m.ConfirmDuration.Observe(time.Since(start).Seconds())
	switch {
	case len(aborted) > 0:
		return confirmation{aborted: aborted, err: fmt.Errorf("%w: aborted on events partitions %v", errCommitUnconfirmed, slices.Sorted(maps.Keys(aborted)))}
	case err != nil:
		return confirmation{err: fmt.Errorf("%w: %w", errCommitUnconfirmed, err)}
	}
	return confirmation{}
}

// callPartitions are the events partitions of calls' started events.
func callPartitions(calls []partition.Call) map[int32]bool {
	ps := make(map[int32]bool, 1)
	for _, c := range calls {
		ps[c.P] = true
	}
	return ps
}

// awaitMarkers polls the partitions of spans until none is pending; it
// returns the partitions seen aborted, and ctx's error if it ended first.
func (e *Executor) awaitMarkers(ctx context.Context, pid int64, spans map[int32]span) (map[int32]bool, error) {
	pending := spans
	aborted := map[int32]bool{}
	backoff := confirmFirstBackoff
	for {
		states, err := e.readMarkers(ctx, pid, e.eventsTopicID(ctx), pending)
		if errors.Is(err, kerr.UnknownTopicID) {
			e.forgetEventsTopicID() // recreated: look it up again
		}
		next := map[int32]span{}
		for p, sp := range pending {
			switch states[p] {
			case markerAborted:
				aborted[p] = true
			case markerPending:
				next[p] = sp
			}
		}
		if len(next) == 0 || len(aborted) > 0 {
			return aborted, nil
		}
		pending = next
		select {
		case <-ctx.Done():
			return aborted, fmt.Errorf("markers of partitions %v not seen (last error: %v): %w", slices.Sorted(maps.Keys(pending)), err, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, confirmMaxBackoff)
	}
}

// readMarkers reads every partition of spans at once, one request each,
// and judges it; a partition whose leader is unknown or whose read failed
// stays pending. pid is the producer whose abort would cover the spans;
// topicID names the events topic (the loop's lookup: the readers only read
// it).
//
// Why one request per partition: a broker returns a batch beyond the
// partition's byte limit only for the first partition of a fetch that has
// data (KIP-74), and lists aborted transactions only over the data it
// returns; a partition that came back empty would look committed.
func (e *Executor) readMarkers(ctx context.Context, pid int64, topicID [16]byte, spans map[int32]span) (map[int32]markerState, error) {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		states  = make(map[int32]markerState, len(spans))
		lastErr error
	)
	for p, sp := range spans {
		wg.Go(func() {
			st, err := e.readMarker(ctx, pid, topicID, p, sp)
			mu.Lock()
			defer mu.Unlock()
			states[p] = st
			if err != nil {
				lastErr = err
			}
		})
	}
	wg.Wait()
	return states, lastErr
}

// readMarker judges one partition by a read_committed fetch of at most one
// batch from the span's first event, without waiting: the response's
// stable offset and aborted-transaction list are what is wanted, not the
// records.
func (e *Executor) readMarker(ctx context.Context, pid int64, topicID [16]byte, p int32, sp span) (markerState, error) {
	topic := e.cfg.Names.Events
	// The session produces to the partition: its metadata names the leader.
	leader, _, err := e.sess.Client().PartitionLeader(topic, p)
	if err != nil || leader < 0 {
		e.sess.Client().ForceMetadataRefresh()
		return markerPending, fmt.Errorf("leader of %s/%d unknown: %v", topic, p, err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 0
	req.MinBytes = 0
	req.MaxBytes = markerFetchBytes
	req.IsolationLevel = 1
	req.SessionEpoch = -1 // a full fetch, outside any fetch session
	t := kmsg.NewFetchRequestTopic()
	t.Topic = topic
	t.TopicID = topicID
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = p
	rp.FetchOffset = sp.first
	rp.CurrentLeaderEpoch = -1
	rp.LogStartOffset = -1
	rp.PartitionMaxBytes = 1 // the first batch still comes whole
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	resp, err := e.markers.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		e.markers.ForceMetadataRefresh() // a broker it does not know yet
		return markerPending, err
	}
	return e.judgeMarker(resp.(*kmsg.FetchResponse), pid, p, sp)
}

// markerFetchBytes bounds a marker fetch's response; the partition's own
// limit (1 byte) makes it one batch in practice. (kfake stops computing
// aborted transactions for a partition cut short by this limit.)
const markerFetchBytes = 1 << 20

// judgeMarker judges partition p from a marker fetch's response. A
// partition that returned no batch is pending: with nothing read, its
// aborted-transaction list says nothing.
func (e *Executor) judgeMarker(resp *kmsg.FetchResponse, pid int64, p int32, sp span) (markerState, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return markerPending, err
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if rp.Partition != p {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				e.sess.Client().ForceMetadataRefresh() // a moved leader, most likely
				return markerPending, fmt.Errorf("%s/%d: %w", e.cfg.Names.Events, p, err)
			}
			if len(rp.RecordBatches) == 0 {
				return markerPending, nil
			}
			return markerOf(pid, sp, rp.LastStableOffset, rp.AbortedTransactions), nil
		}
	}
	return markerPending, fmt.Errorf("%s/%d: not in the fetch response", e.cfg.Names.Events, p)
}

// anyProducer stands for a producer id the member could not read: any
// abort over the span then counts as its own (wrongly so only when another
// producer's aborted transaction interleaves, which costs a redo, never an
// effect).
const anyProducer int64 = -1

// markerOf judges one partition: pending while its stable offset has not
// passed the span; aborted if an aborted transaction of pid began at or
// before the span's last event (the broker lists only those whose abort
// marker is at or after the fetch offset, the span's first event); else
// committed.
func markerOf(pid int64, sp span, lso int64, aborts []kmsg.FetchResponseTopicPartitionAbortedTransaction) markerState {
	if lso <= sp.last {
		return markerPending
	}
	for _, at := range aborts {
		if (at.ProducerID == pid || pid == anyProducer) && at.FirstOffset <= sp.last {
			return markerAborted
		}
	}
	return markerCommitted
}

// markerClient is the client of the marker fetches. Why not the
// session's: a broker answers one request of a connection at a time, and
// kgo sends fetches on one connection per broker, where the consumer's
// own fetch waits up to its max wait (5 s) for data. Behind it, each
// confirmation took 5 s.
func (e *Executor) markerClient() (*kgo.Client, error) {
	opts := append([]kgo.Opt{kgo.SeedBrokers(e.cfg.Brokers...), kgo.WithLogger(kgoLogger{l: e.cfg.Logger, level: e.cfg.KafkaLogLevel})},
		e.cfg.Connect...)
	cl, err := kgo.NewClient(append(opts, e.cfg.ClientOpts...)...)
	if err != nil {
		return nil, fmt.Errorf("executor: commit confirmation client: %w", err)
	}
	return cl, nil
}

// eventsTopicID is the events topic's id (Fetch names topics by id from
// version 13), looked up once and again after the broker says it is
// unknown. A zero id (lookup failed) leaves the broker to refuse the read,
// which keeps the partition pending.
func (e *Executor) eventsTopicID(ctx context.Context) [16]byte {
	if e.eventsID != ([16]byte{}) {
		return e.eventsID
	}
	// Through the marker client: this also loads its brokers.
	td, err := kadm.NewClient(e.markers).ListTopics(ctx, e.cfg.Names.Events)
	if err == nil {
		if d, ok := td[e.cfg.Names.Events]; ok && d.Err == nil {
			e.eventsID = d.ID
		}
	}
	return e.eventsID
}

func (e *Executor) forgetEventsTopicID() { e.eventsID = [16]byte{} }

// spansOf are the spans of tr's events on the partitions ps.
func (tr *txnRecords) spansOf(ps map[int32]bool) map[int32]span {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	out := map[int32]span{}
	for p := range ps {
		first, ok := tr.firstOffset[p]
		if !ok {
			continue
		}
		out[p] = span{first: first, last: tr.lastOffset[p]}
	}
	return out
}

// rewind moves the consumer back to the first record of the tick polled
// from each intents or control partition in ps: a transaction that the
// broker aborted behind a reported commit may still have moved the
// group's offsets (the offsets commit is another partition, whose marker
// can commit), and its inputs must be decided again.
func (e *Executor) rewind(pr *prepared, ps map[int32]bool) {
	e.rewindTo(pr, func(_ string, p int32) bool { return ps[p] }, "consumer moved back to the aborted tick's inputs")
}

// rewindUncommitted moves the consumer back to the first record of the
// tick polled from each intents or control partition that committed
// (the group's commits, fetched after the tick's end of unknown outcome)
// has no offset for.
//
// Why: the resync after an unknown end moves only the partitions the
// group has committed, and an end that gave up during its flush (a broker
// that does not answer, a rebalance waiting) returns without rewinding
// anything. A partition the group never committed stayed where the
// aborted tick left it, and the tick's records were never decided again
// (found by the chaos harness on a cluster: a fresh group's first
// transactions, aborted by a failover, lost their intents). A
// commit fetched after the end includes this tick's if it committed (the
// abort that followed settled it), so a partition without one had its
// tick aborted. Only the tick's own records are taken back: its position
// before the tick is the first of them.
func (e *Executor) rewindUncommitted(pr *prepared, committed map[string]map[int32]kgo.EpochOffset) {
	e.rewindTo(pr, func(t string, p int32) bool {
		eo, ok := committed[t][p]
		return !ok || eo.Offset < 0
	}, "consumer moved back to the inputs of a tick whose end is unknown, on partitions the group never committed")
}

// rewindTo moves the consumer back to the first record of the tick polled
// from each intents or control partition that back chooses.
func (e *Executor) rewindTo(pr *prepared, back func(topic string, p int32) bool, why string) {
	set := map[string]map[int32]kgo.EpochOffset{}
	for _, r := range pr.records {
		if (r.Topic != e.cfg.Names.Intents && r.Topic != e.cfg.Names.Control) || !back(r.Topic, r.Partition) {
			continue
		}
		if set[r.Topic] == nil {
			set[r.Topic] = map[int32]kgo.EpochOffset{}
		}
		if cur, ok := set[r.Topic][r.Partition]; !ok || r.Offset < cur.Offset {
			set[r.Topic][r.Partition] = kgo.EpochOffset{Epoch: r.LeaderEpoch, Offset: r.Offset}
		}
	}
	if len(set) == 0 {
		return
	}
	e.sess.Client().SetOffsets(set)
	e.cfg.Logger.Warn(why, "offsets", set)
}
