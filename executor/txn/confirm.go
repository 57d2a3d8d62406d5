package txn

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
	"github.com/twmb/franz-go/pkg/kmsg"
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
//
// The reads go through a client of their own (Config.Markers), not the
// group session's: a broker answers one request of a connection at a
// time, and kgo sends fetches on one connection per broker, where the
// consumer's own fetch waits up to its max wait (5 s) for data. Behind
// it, each confirmation took 5 s.

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

// confirm waits until every events partition of b.Confirm that holds an
// event of b shows b's transaction committed. It gives up after the
// transaction timeout, or at Interrupt (the group needs the loop): the
// transaction is then treated as an end of unknown outcome.
func (s *Session) confirm(ctx context.Context, b *Transaction) confirmation {
	spans := b.spansOf(b.Confirm)
	if len(spans) == 0 {
		return confirmation{}
	}
	start := time.Now()
	cctx, done := s.interruptible(ctx)
	defer done()
	pid, _ := b.producer() // known: the spans are of acknowledged records
	aborted, err := s.awaitMarkers(cctx, pid, s.cfg.Names.Events, spans)
	s.cfg.ConfirmDuration.Observe(time.Since(start).Seconds())
	switch {
	case len(aborted) > 0:
		return confirmation{aborted: aborted, err: fmt.Errorf("%w: aborted on events partitions %v", errCommitUnconfirmed, slices.Sorted(maps.Keys(aborted)))}
	case err != nil:
		return confirmation{err: fmt.Errorf("%w: %w", errCommitUnconfirmed, err)}
	}
	return confirmation{}
}

// awaitMarkers polls the partitions of topic's spans until none is
// pending; it returns the partitions seen aborted, and ctx's error if it
// ended first.
func (s *Session) awaitMarkers(ctx context.Context, pid int64, topic string, spans map[int32]span) (map[int32]bool, error) {
	pending := spans
	aborted := map[int32]bool{}
	backoff := confirmFirstBackoff
	for {
		states, err := s.readMarkers(ctx, pid, topic, s.topicID(ctx, topic), pending)
		if errors.Is(err, kerr.UnknownTopicID) {
			s.forgetTopicID(topic) // recreated: look it up again
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
// topicID names topic (the loop's lookup: the readers only read it).
//
// Why one request per partition: a broker returns a batch beyond the
// partition's byte limit only for the first partition of a fetch that has
// data (KIP-74), and lists aborted transactions only over the data it
// returns; a partition that came back empty would look committed.
func (s *Session) readMarkers(ctx context.Context, pid int64, topic string, topicID [16]byte, spans map[int32]span) (map[int32]markerState, error) {
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		states  = make(map[int32]markerState, len(spans))
		lastErr error
	)
	for p, sp := range spans {
		wg.Go(func() {
			st, err := s.readMarker(ctx, pid, topic, topicID, p, sp)
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
// batch from the span's first event: the response's stable offset and
// aborted-transaction list are what is wanted, not the records.
//
// The fetch waits on the broker for its marker (MinBytes 1, MaxWait
// markerFetchWait): a read_committed fetch sees no bytes below the stable
// offset while the transaction is open, and the broker answers it as soon
// as the marker moves the stable offset past them. So the marker is seen
// the moment it is written, where a fetch that did not wait was answered
// pending and looked again after a backoff (1, 2, 4 ms...), which cost
// the call's confirmation about a millisecond on a real broker. An abort
// marker answers it too (the aborted bytes are below the stable offset);
// a partition held behind another producer's open transaction is answered
// empty after the wait and looked at again.
func (s *Session) readMarker(ctx context.Context, pid int64, topic string, topicID [16]byte, p int32, sp span) (markerState, error) {
	// The session produces to the partition: its metadata names the leader.
	leader, _, err := s.gs.Client().PartitionLeader(topic, p)
	if err != nil || leader < 0 {
		s.gs.Client().ForceMetadataRefresh()
		return markerPending, fmt.Errorf("leader of %s/%d unknown: %v", topic, p, err)
	}
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = int32(markerFetchWait.Milliseconds())
	req.MinBytes = 1
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
	resp, err := s.markers.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		s.markers.ForceMetadataRefresh() // a broker it does not know yet
		return markerPending, err
	}
	return s.judgeMarker(resp.(*kmsg.FetchResponse), topic, pid, p, sp)
}

// markerFetchWait bounds a marker fetch's wait on the broker: markers
// follow EndTxn within milliseconds, so a fetch that waited this long
// found none (an abort kfake does not wake a fetch for, a partition
// behind another transaction) and the next look comes as soon as the
// backoff allows. Interrupt ends the wait through the request's context.
const markerFetchWait = 100 * time.Millisecond

// markerFetchBytes bounds a marker fetch's response; the partition's own
// limit (1 byte) makes it one batch in practice. (kfake stops computing
// aborted transactions for a partition cut short by this limit.)
const markerFetchBytes = 1 << 20

// judgeMarker judges partition p from a marker fetch's response. A
// partition that returned no batch is pending: with nothing read, its
// aborted-transaction list says nothing.
func (s *Session) judgeMarker(resp *kmsg.FetchResponse, topic string, pid int64, p int32, sp span) (markerState, error) {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return markerPending, err
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if rp.Partition != p {
				continue
			}
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				s.gs.Client().ForceMetadataRefresh() // a moved leader, most likely
				return markerPending, fmt.Errorf("%s/%d: %w", topic, p, err)
			}
			if len(rp.RecordBatches) == 0 {
				return markerPending, nil
			}
			return markerOf(pid, sp, rp.LastStableOffset, rp.AbortedTransactions), nil
		}
	}
	return markerPending, fmt.Errorf("%s/%d: not in the fetch response", topic, p)
}

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
		if at.ProducerID == pid && at.FirstOffset <= sp.last {
			return markerAborted
		}
	}
	return markerCommitted
}

// topicID is topic's id (Fetch names topics by id from version 13),
// looked up once and again after the broker says it is unknown. A zero id
// (lookup failed) leaves the broker to refuse the read, which keeps the
// partition pending.
func (s *Session) topicID(ctx context.Context, topic string) [16]byte {
	if id, ok := s.topicIDs[topic]; ok {
		return id
	}
	// Through the marker client: this also loads its brokers.
	td, err := kadm.NewClient(s.markers).ListTopics(ctx, topic)
	if err == nil {
		if d, ok := td[topic]; ok && d.Err == nil {
			if s.topicIDs == nil {
				s.topicIDs = map[string][16]byte{}
			}
			s.topicIDs[topic] = d.ID
		}
	}
	return s.topicIDs[topic]
}

func (s *Session) forgetTopicID(topic string) { delete(s.topicIDs, topic) }

// abortedBehindOffsets reports whether a marker over the records b wrote
// on the events and intents topics shows b's transaction aborted, after
// an end of unknown outcome whose offsets the group shows committed
// (settleUnknown says why they are not enough).
func (s *Session) abortedBehindOffsets(ctx context.Context, b *Transaction) bool {
	v, topic, aborted := s.ownMarkers(ctx, b)
	if v != ownAborted {
		return false
	}
	s.cfg.AbortedBehindOffsets.Inc()
	pid, _ := b.producer()
	s.cfg.Logger.Error("a transaction whose end failed has its records aborted while the group's offsets moved past its inputs; its inputs are decided again",
		"transactional_id", s.cfg.TransactionalID, "producer_id", pid, "topic", topic,
		"partitions", slices.Sorted(maps.Keys(aborted)), "spans", b.spansOn(topic))
	return true
}

// committedAheadOfOffsets reports whether the markers over every record
// b wrote on the events and intents topics show b's transaction
// committed, after an end of unknown outcome whose group offsets did not
// move past its inputs (settleUnknown says why that is not enough).
func (s *Session) committedAheadOfOffsets(ctx context.Context, b *Transaction) bool {
	v, _, _ := s.ownMarkers(ctx, b)
	return v == ownCommitted
}

// ownVerdict is what the markers over a transaction's own records show.
type ownVerdict int

const (
	ownUnseen    ownVerdict = iota // a marker not seen in time, no producer id, or no record to look at
	ownAborted                     // an abort of the producer covers records on a partition
	ownCommitted                   // every record's partition shows the commit
)

// ownMarkers reads the markers over the records b wrote on the events and
// intents topics, waiting for them as the confirmation does and bounded
// the same way. An abort on any partition is ownAborted (its topic and
// partitions given). Markers not seen in time, or a producer id not known
// (another producer's abort would be taken for this one's), are
// ownUnseen: the group's offsets keep their verdict.
func (s *Session) ownMarkers(ctx context.Context, b *Transaction) (v ownVerdict, topic string, aborted map[int32]bool) {
	pid, ok := b.producer()
	if !ok {
		return ownUnseen, "", nil
	}
	cctx, done := s.interruptible(ctx)
	defer done()
	for _, topic := range []string{s.cfg.Names.Events, s.cfg.Names.Intents} {
		spans := b.spansOn(topic)
		if len(spans) == 0 {
			continue
		}
		aborted, err := s.awaitMarkers(cctx, pid, topic, spans)
		switch {
		case len(aborted) > 0:
			return ownAborted, topic, aborted
		case err != nil:
			s.cfg.Logger.Warn("the records of a transaction whose end failed show no marker in time; the group's offsets stand for its outcome",
				"err", err, "producer_id", pid, "topic", topic)
			return ownUnseen, topic, nil
		}
		v = ownCommitted
	}
	return v, "", nil
}

// spansOf are the spans of the events on the partitions ps.
func (b *Transaction) spansOf(ps map[int32]bool) map[int32]span {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[int32]span{}
	for p := range ps {
		if sp, ok := b.mu.spans[b.events][p]; ok {
			out[p] = sp
		}
	}
	return out
}

// spansOn are the spans of the records on every partition of topic.
func (b *Transaction) spansOn(topic string) map[int32]span {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.mu.spans[topic])
}
