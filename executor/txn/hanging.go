package txn

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Hanging transactions. A transaction a partition still holds open while
// its coordinator has no such transaction ongoing is never closed by
// Kafka (KIP-664 calls it hanging): its partition's last stable offset
// stops, so a read-committed reader of it stalls (a restore of an events
// partition, agents reading results), and on __consumer_offsets every
// stable offset fetch of the group's partitions answers
// UNSTABLE_OFFSET_COMMIT for ever, which leaves a member waiting in its
// assignment with nothing to poll. Broker kills and network faults leave
// them on every topic the executor writes (Kafka 4.4, transaction.version
// 2), including for a transaction whose End had reported a commit.
//
// Kafka's tool closes them with an abort marker. Here the executor closes
// them with a commit marker instead, on purpose. An abort hides what the
// transaction wrote; if its executor had been told "committed" it has
// already made the calls whose started events would vanish, and the next
// owner would call again: a second effect. A commit only reveals: a
// started event without a call leaves its key in doubt (the reconciler
// settles it by its class's path), offsets already passed are re-read and
// decided against the view, and an answer may reach an agent twice (the
// second is a replay). Revealing can cost an extra answer, hiding can
// cost an extra effect; at most once needs the first.
//
// Two exceptions, both transactions known to have been aborted, whose
// intents were therefore redone: revealing them would answer those
// intents a second time. They are closed with an abort marker.
//   - The writer treated it as aborted (it asked End for an abort, or
//     its end was of unknown outcome and the group's offsets had not
//     moved). Only the writer's
//     data dir knows (owntxns.go).
//   - Its coordinator aborted it and nothing followed: the transactional
//     id's last state is CompleteAbort at the epoch after the remnant's.
//     A writer killed with its transaction open leaves exactly that (the
//     coordinator times the transaction out, and its abort markers may be
//     missing from every partition), and no data dir records it
//     (coordinatorAborted).
// Any other member waits unknownHangingAge times longer before it
// commits, leaving the writer, or its restarted process, time to decide
// first. docs/RELIABILITY.md (findings) has the runs that showed each case.
//
// An open transaction its coordinator still runs is never touched.

// hangingAge is how long a transaction must have been open on a
// partition before it can be judged hanging: far beyond any transaction
// timeout this executor uses, so only a transaction the coordinator has
// forgotten qualifies.
func (s *Session) hangingAge() time.Duration { return 3 * s.cfg.TransactionTimeout }

// stalledAfter is the interval between two looks for hanging
// transactions: two read-only admin requests (metadata, producers).
func (s *Session) stalledAfter() time.Duration { return 2 * s.cfg.TransactionTimeout }

// openTxn is one producer's open transaction on one partition.
type openTxn struct {
	topic            string
	partition        int32
	producerID       int64
	producerEpoch    int16
	coordinatorEpoch int32
	lastWrite        time.Time
}

// hangingCandidates are the transactions open on the described partitions
// for longer than age: the only ones that may be hanging.
func hangingCandidates(ps kadm.DescribedProducersTopics, now time.Time, age time.Duration) []openTxn {
	var out []openTxn
	ps.EachProducer(func(p kadm.DescribedProducer) {
		last := time.UnixMilli(p.LastTimestamp)
		if p.CurrentTxnStartOffset < 0 || now.Sub(last) < age {
			return
		}
		out = append(out, openTxn{topic: p.Topic, partition: p.Partition, producerID: p.ProducerID,
			producerEpoch: p.ProducerEpoch, coordinatorEpoch: p.CoordinatorEpoch, lastWrite: last})
	})
	return out
}

// runningStates are the coordinator states in which a producer id may
// still own an open transaction: those are left alone.
var runningStates = map[string]bool{"Ongoing": true, "PrepareCommit": true, "PrepareAbort": true, "PrepareEpochFence": true}

// closeHanging finds the hanging transactions on the given partitions
// and closes each with the marker closeMarker chooses. It returns how many
// it closed. unlisted counts the topics whose partitions could not even be
// listed (no Describe), for the blind-check gauge.
func (s *Session) closeHanging(ctx context.Context, set kadm.TopicsSet, unlisted int) (int, error) {
	described, err := s.adm.DescribeProducers(ctx, set)
	s.cfg.HangingBlind.Set(float64(unlisted + blind(set, described, err)))
	if err != nil {
		return 0, err
	}
	cands := hangingCandidates(described, time.Now(), s.hangingAge())
	if len(cands) == 0 {
		return 0, nil
	}
	coords, err := s.coordinatorStates(ctx, cands)
	if err != nil {
		return 0, err
	}
	closed := 0
	now := time.Now()
	for _, c := range cands {
		commit, why := closeMarker(c, s.aborted.aborted(c.producerID, c.producerEpoch), coords[c.producerID], now, s.hangingAge())
		if why == "" {
			continue
		}
		m := kadm.TxnMarkers{ProducerID: c.producerID, ProducerEpoch: c.producerEpoch, CoordinatorEpoch: c.coordinatorEpoch, Commit: commit,
			Topics: kadm.TopicsSet{c.topic: {c.partition: {}}}}
		if err := markersErr(s.adm.WriteTxnMarkers(ctx, m)); err != nil {
			s.cfg.HangingUnclosed.WithLabelValues(unclosedReason(err)).Inc()
			s.cfg.Logger.Error("closing a hanging transaction failed; its partition stays stalled (ClusterAction needed, see docs/SECURITY.md)", "topic", c.topic, "partition", c.partition, "producer_id", c.producerID, "reason", unclosedReason(err), "err", err)
			continue
		}
		closed++
		s.cfg.HangingCommitted.Inc()
		s.cfg.Logger.Warn("closed a hanging transaction (open on the partition, unknown to its coordinator)",
			"commit", commit, "why", why, "topic", c.topic, "partition", c.partition, "producer_id", c.producerID, "producer_epoch", c.producerEpoch,
			"open_since", c.lastWrite)
	}
	return closed, nil
}

// coordinatorStates describes the transactional ids whose producer ids
// hold the candidates, by producer id. Ids a coordinator does not list
// (expired, or a producer id since replaced) are absent. An id listed but
// not described keeps its listed state with an unknown epoch (-1): it is
// still left alone while running, and proves no abort.
func (s *Session) coordinatorStates(ctx context.Context, cands []openTxn) (map[int64]kadm.DescribedTransaction, error) {
	pids := make([]int64, 0, len(cands))
	for _, c := range cands {
		pids = append(pids, c.producerID)
	}
	listed, err := s.adm.ListTransactions(ctx, pids, nil)
	if err != nil {
		return nil, err
	}
	out := map[int64]kadm.DescribedTransaction{}
	listed.Each(func(t kadm.ListedTransaction) {
		out[t.ProducerID] = kadm.DescribedTransaction{TxnID: t.TxnID, ProducerID: t.ProducerID, ProducerEpoch: -1, State: t.State}
	})
	if len(out) == 0 {
		return out, nil
	}
	described, err := s.adm.DescribeTransactions(ctx, listed.TransactionalIDs()...)
	if err != nil {
		s.cfg.Logger.Debug("hanging check: transactions not described", "err", err)
	}
	for _, d := range described {
		if l, ok := out[d.ProducerID]; ok && d.Err == nil && d.TxnID == l.TxnID {
			out[d.ProducerID] = d
		}
	}
	return out, nil
}

// closeMarker decides how to close a hanging candidate: commit (true) or
// abort (false), and why, for the log; no reason means not yet. A
// producer whose coordinator still runs a transaction is never touched; a
// transaction known to be aborted is closed with an abort at once; any
// other waits unknownHangingAge times the hanging age and is committed
// (the package comment explains why a commit).
func closeMarker(c openTxn, ownAborted bool, coord kadm.DescribedTransaction, now time.Time, age time.Duration) (commit bool, why string) {
	switch {
	case coord.ProducerID == c.producerID && runningStates[coord.State]:
		return false, ""
	case ownAborted:
		return false, "aborted by its writer"
	case coordinatorAborted(c, coord):
		return false, "aborted by its coordinator"
	case now.Sub(c.lastWrite) < unknownHangingAge*age:
		return false, "" // its writer, if it treated it as aborted, closes it first
	}
	return true, "outcome unknown"
}

// coordinatorAborted reports whether the coordinator's last word on the
// candidate's producer is an abort of the candidate's own transaction.
// Every transaction end bumps the producer epoch (transaction version 2),
// so CompleteAbort at the remnant's epoch + 1 is the end of exactly that
// transaction, with nothing begun since. (Under version 1 an epoch bump
// is a fence or a timeout, which aborts the open transaction too.)
// CompleteCommit at that epoch is not taken as proof of a commit: under
// version 1 it would be a later transaction's.
func coordinatorAborted(c openTxn, coord kadm.DescribedTransaction) bool {
	return coord.ProducerID == c.producerID && coord.State == "CompleteAbort" && coord.ProducerEpoch == c.producerEpoch+1
}

// CheckHanging looks for hanging transactions on every partition of the
// topics this executor writes or reads (intents, control, events,
// results, dead letters) and of the group's offsets topic, and closes
// them, at most once per stalledAfter (a call in between returns at
// once): one forgotten transaction spans every partition its tick wrote,
// and must be closed on each. It blocks for up to stallCheckTimeout;
// cancelling ctx ends it sooner. Its failures are logged, not returned.
//
// The loop calls it every tick, not only when a partition it reads
// stalls: a forgotten transaction on a results or dead-letter partition
// stops no executor, only the agents reading answers (read-committed)
// stop seeing them (answers of four results partitions invisible while
// every intent was processed, docs/RELIABILITY.md). A restore whose
// events partition has a transaction that will not settle calls it too.
func (s *Session) CheckHanging(ctx context.Context) {
	now := time.Now()
	if now.Sub(s.lastStallCheck) < s.stalledAfter() {
		return
	}
	s.lastStallCheck = now
	cctx, cancel := context.WithTimeout(ctx, stallCheckTimeout)
	defer cancel()
	set, unlisted, err := s.partitionsOf(cctx, s.cfg.Names.Intents, s.cfg.Names.Control, s.cfg.Names.Events,
		s.cfg.Names.Results, s.cfg.Names.DeadLetter, offsetsTopic)
	if err != nil {
		s.cfg.Logger.Debug("stall check: topics not described", "err", err)
		return
	}
	if _, err := s.closeHanging(cctx, set, unlisted); err != nil {
		s.cfg.Logger.Debug("stall check failed", "err", err)
	}
}

const offsetsTopic = "__consumer_offsets"

// partitionsOf lists every partition of the named topics that exist, and
// counts the topics it was not allowed to list. One request per topic:
// kadm fails a listing as a whole when one topic is refused, and a
// member without Describe on __consumer_offsets must still check its own
// topics.
func (s *Session) partitionsOf(ctx context.Context, names ...string) (kadm.TopicsSet, int, error) {
	set := kadm.TopicsSet{}
	unlisted := 0
	for _, name := range names {
		td, err := s.adm.ListTopicsWithInternal(ctx, name)
		if errors.Is(err, kerr.TopicAuthorizationFailed) {
			unlisted++
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		for _, t := range td {
			if t.Err != nil {
				continue
			}
			for p := range t.Partitions {
				set.Add(t.Topic, p)
			}
		}
	}
	return set, unlisted, nil
}

// markersErr is the request's error, else the first partition's: a
// refused marker must not be counted as closed.
func markersErr(rs kadm.TxnMarkersResponses, err error) error {
	if err != nil {
		return err
	}
	for _, m := range rs {
		for _, t := range m.Topics {
			for _, p := range t.Partitions {
				if p.Err != nil {
					return p.Err
				}
			}
		}
	}
	return nil
}

// unclosedReason labels a failed close: not_authorized when the broker
// refused for want of ClusterAction (docs/SECURITY.md), else error.
func unclosedReason(err error) string {
	if errors.Is(err, kerr.ClusterAuthorizationFailed) {
		return "not_authorized"
	}
	return "error"
}

// blind counts the partitions a hanging check could not look at: all of
// them when the request failed (kadm fails the whole request when one
// topic is not authorized: without Read on __consumer_offsets the check
// sees nothing at all), else those that answered an error.
func blind(set kadm.TopicsSet, ps kadm.DescribedProducersTopics, err error) int {
	if err == nil {
		return unreadable(ps)
	}
	n := 0
	for _, t := range set {
		n += len(t)
	}
	return n
}

// unreadable counts the described partitions that answered an error.
func unreadable(ps kadm.DescribedProducersTopics) int {
	n := 0
	for _, t := range ps {
		for _, p := range t.Partitions {
			if p.Err != nil {
				n++
			}
		}
	}
	return n
}
