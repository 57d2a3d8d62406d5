package txn

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// What the consumer's offsets are after a transaction that did not
// commit, as far as the member can tell.

// settle follows a transaction that was seen to abort (endErr nil) or
// whose end failed (endErr, or a confirmation that failed): the consumer
// moves to what the group really committed. moved reports that the
// group's offsets show the failed end's commit; the caller records a
// transaction it redoes as aborted. An error is fatal.
func (s *Session) settle(b *Transaction, endErr error) (moved bool, err error) {
	if endErr != nil {
		// The producer id and epoch name the transaction in the broker's
		// log (kafka-dump-log, DescribeProducers), so that a remnant found
		// later can be traced to this member and this tick.
		s.cfg.Logger.Warn("transaction failed; partitions catch up from the log", "err", endErr, "produce_err", b.produceErr(),
			"producer_id", b.txn.pid, "producer_epoch", b.txn.epoch)
		s.offsetsUnsure = true
	}
	set, err := s.resyncOffsets()
	if err != nil {
		return false, err
	}
	if endErr != nil && set != nil {
		s.rewindUncommitted(b.Polled, set)
		owned := s.cfg.Owned()
		moved = actedCommitted(b.tried, set, func(p int32) bool { return slices.Contains(owned, p) })
		s.cfg.Logger.Info("unconfirmed transaction judged by the group's offsets", "producer_id", b.txn.pid,
			"producer_epoch", b.txn.epoch, "offsets_moved", moved)
	}
	return moved, nil
}

// settleUnknown settles a transaction whose end failed, and does not take
// the group's offsets alone for its commit: when they moved past inputs it
// polled, the markers over its own records decide (abortedBehindOffsets),
// and a transaction they show aborted has its inputs decided again.
//
// Why: on a replicated cluster the offsets and the records can be decided
// apart. A transaction coordinator killed after appending PrepareCommit,
// and restarted before its partition's leadership moved, loaded that
// record although no follower had it, wrote COMMIT on __consumer_offsets
// and lost the record when the new leader truncated it; the new
// coordinator aborted the records (docs/RELIABILITY.md, the coordinator
// that commits the offsets and aborts the records). Taken at the offsets'
// word, the member would skip the transaction's inputs while its records,
// the intents it forwarded among them, were aborted: those intents would
// never be answered. The offsets can also have moved by
// another member's commit, the partition having moved on: the markers
// then show this transaction aborted too, and taking its inputs back is
// moot, since the partition is being revoked and any transaction of this
// member on it is fenced.
//
// The mirror split is judged the same way: when the offsets did not move
// past the inputs but the markers over the transaction's records show it
// committed (committedAheadOfOffsets), the member acts on the commit
// (Committed: its calls may go, their started events are seen committed)
// and moves past the inputs, whose offsets it commits at once
// (commitSkippedOffsets). Taken at the offsets' word, the redone inputs
// would be decided against a view that holds the transaction's events: a
// replay answered twice, and started keys whose calls were never made
// left in doubt.
func (s *Session) settleUnknown(ctx context.Context, b *Transaction, endErr error) (End, error) {
	moved, err := s.settle(b, endErr)
	switch {
	case err != nil:
		return Unknown, err
	case moved && b.pollsInputs(s.cfg.Names) && s.abortedBehindOffsets(ctx, b):
		s.rewindTo(b.Polled, func(string, int32) bool { return true },
			"consumer moved back to the inputs of a transaction whose records aborted while the group's offsets moved past them")
		return Unknown, s.recordAborted(b)
	case !moved && b.pollsInputs(s.cfg.Names) && s.committedAheadOfOffsets(ctx, b):
		return Committed, s.commitSkippedOffsets(ctx, b)
	case !moved:
		return Unknown, s.recordAborted(b)
	}
	return Unknown, nil
}

// commitSkippedOffsets moves the consumer past the inputs of b, whose
// records committed while the group's offsets did not, and commits those
// offsets in a transaction of their own: left to the next tick, an abort
// before it would rewind the consumer to the group's offsets again, and
// the inputs would be redone after all. A failure here leaves them to the
// next transaction that commits (logged); an error is fatal.
func (s *Session) commitSkippedOffsets(ctx context.Context, b *Transaction) error {
	owned := s.cfg.Owned()
	set := map[string]map[int32]kgo.EpochOffset{}
	for topic, ps := range b.tried {
		for p, eo := range ps {
			if slices.Contains(owned, p) {
				if set[topic] == nil {
					set[topic] = map[int32]kgo.EpochOffset{}
				}
				set[topic][p] = eo
			}
		}
	}
	s.gs.Client().SetOffsets(set)
	s.cfg.CommittedAheadOfOffsets.Inc()
	s.cfg.Logger.Error("a transaction whose end failed has its records committed while the group's offsets did not move past its inputs; acting on the commit",
		"transactional_id", s.cfg.TransactionalID, "producer_id", b.txn.pid, "producer_epoch", b.txn.epoch, "offsets", set)
	out, err := s.Commit(ctx, &Transaction{}, func() {})
	if err == nil && out != Committed {
		s.cfg.Logger.Warn("the offsets past a committed transaction's inputs did not commit; the next transaction carries them", "outcome", out)
	}
	return err
}

// resyncOffsets moves the consumer to the offsets the group really has
// committed, after a transaction end whose outcome we do not know.
//
// Why: when EndTxn reaches the coordinator but its answer does not reach
// us (the broker dies in between), the transaction commits while the
// session reports an error and rewinds to the offsets it last saw
// committed. Every intent of that transaction would then be decided again
// and answered a second time (two terminal answers for one intent after a
// broker bounce, docs/RELIABILITY.md). The session keeps rewinding to its
// stale idea of "committed" after every abort until a commit of its own
// succeeds, so the resync runs after each rewind until then.
//
// The fetch is stable (fetchCommitted): an unknown end's own offset
// commit may be undecided for a while after the end failed, and read as
// "not moved" it would redo the tick and answer its intents twice.
func (s *Session) resyncOffsets() (map[string]map[int32]kgo.EpochOffset, error) {
	if !s.offsetsUnsure || len(s.cfg.Owned()) == 0 {
		return nil, nil
	}
	deadline := time.Now().Add(s.cfg.BrokerOutage)
	for {
		set, err := s.fetchCommitted()
		if err == nil {
			s.gs.Client().SetOffsets(set)
			s.cfg.Logger.Info("consumer moved to the committed offsets after an unconfirmed transaction end", "offsets", set)
			return set, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: committed offsets unknown after a failed transaction end: %w", ErrFatal, err)
		}
		s.cfg.Logger.Warn("fetching committed offsets failed; retrying", "err", err)
		time.Sleep(resyncRetry)
	}
}

// fetchCommitted returns the group's stable committed offsets of the
// partitions this member owns; partitions with no commit are left out
// (the session's rewind to the reset offset is then right). Stable
// (KIP-447's RequireStable): an offset commit of a transaction not yet
// decided is an error (UNSTABLE_OFFSET_COMMIT, retried by the caller),
// never read as the offset before it. Only owned partitions are asked:
// the broker answers per partition, so another member's open transaction
// on its own partitions does not hold this fetch up.
func (s *Session) fetchCommitted() (map[string]map[int32]kgo.EpochOffset, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.TransactionTimeout)
	defer cancel()
	n := s.cfg.Names
	owned := s.cfg.Owned()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group, req.RequireStable = s.cfg.Group, true
	for _, t := range []string{n.Intents, n.Control} {
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = t, owned
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, s.gs.Client())
	if err != nil {
		return nil, err
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("offsets of group %s: %w", s.cfg.Group, err)
	}
	set := map[string]map[int32]kgo.EpochOffset{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
				return nil, fmt.Errorf("offset of %s/%d: %w", rt.Topic, rp.Partition, err)
			}
			if rp.Offset < 0 {
				continue
			}
			if set[rt.Topic] == nil {
				set[rt.Topic] = map[int32]kgo.EpochOffset{}
			}
			set[rt.Topic][rp.Partition] = kgo.EpochOffset{Epoch: rp.LeaderEpoch, Offset: rp.Offset}
		}
	}
	return set, nil
}

// rewind moves the consumer back to the first record of polled from each
// intents or control partition in ps: a transaction that the broker
// aborted behind a reported commit may still have moved the group's
// offsets (the offsets commit is another partition, whose marker can
// commit), and its inputs must be decided again.
func (s *Session) rewind(polled []*kgo.Record, ps map[int32]bool) {
	s.rewindTo(polled, func(_ string, p int32) bool { return ps[p] }, "consumer moved back to the aborted tick's inputs")
}

// rewindUncommitted moves the consumer back to the first record of polled
// from each intents or control partition that committed (the group's
// commits, fetched after the transaction's end of unknown outcome) has no
// offset for.
//
// Why: the resync after an unknown end moves only the partitions the
// group has committed, and an end that gave up during its flush (a broker
// that does not answer, a rebalance waiting) returns without rewinding
// anything. A partition the group never committed stayed where the
// aborted transaction left it, and its records were never decided again
// (a fresh group's first transactions, aborted by a failover on a
// replicated cluster, lost their intents). A commit fetched after the end
// includes this transaction's if it committed (the abort that followed
// settled it, and the fetch is stable), so a partition without one had
// its transaction aborted. Only the transaction's own records are taken
// back: its position before them is the first of them. Partitions the
// group has committed are left to the resync, which uses the fetched
// offsets alone (a rewind of whole partitions there re-decided records
// already answered after a reassignment).
func (s *Session) rewindUncommitted(polled []*kgo.Record, committed map[string]map[int32]kgo.EpochOffset) {
	s.rewindTo(polled, func(t string, p int32) bool {
		eo, ok := committed[t][p]
		return !ok || eo.Offset < 0
	}, "consumer moved back to the inputs of a transaction whose end is unknown, on partitions the group never committed")
}

// rewindTo moves the consumer back to the first record of polled from
// each intents or control partition that back chooses.
func (s *Session) rewindTo(polled []*kgo.Record, back func(topic string, p int32) bool, why string) {
	n := s.cfg.Names
	set := map[string]map[int32]kgo.EpochOffset{}
	for _, r := range polled {
		if (r.Topic != n.Intents && r.Topic != n.Control) || !back(r.Topic, r.Partition) {
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
	s.gs.Client().SetOffsets(set)
	s.cfg.Logger.Warn(why, "offsets", set)
}

// recordAborted keeps b's transaction among those this member treated as
// aborted (owntxns.go), under the producer id and epoch of txnOf. A write
// that fails is fatal: the member would redo the transaction with nothing
// to keep a remnant of it hidden, and a repair that committed the remnant
// would answer its intents twice (a failed write of the store breaks it
// anyway, state.ErrBroken).
func (s *Session) recordAborted(b *Transaction) error {
	k, ok := b.txnOf()
	if !ok {
		return nil // no producer id, so nothing of it was written
	}
	if err := s.aborted.add(k, time.Now()); err != nil {
		return fmt.Errorf("%w: recording the aborted transaction of producer %d epoch %d: %w", ErrFatal, k.pid, k.epoch, err)
	}
	return nil
}
