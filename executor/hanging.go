package executor

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Hanging transactions. A transaction a partition still holds open while
// its coordinator has no such transaction ongoing is never closed by
// Kafka (KIP-664 calls it hanging): its partition's last stable offset
// stops, so a read-committed consumer of it stalls, and on
// __consumer_offsets every stable offset fetch of the group's partitions
// answers UNSTABLE_OFFSET_COMMIT for ever, which leaves a member waiting
// in its assignment with nothing to poll. The chaos harness produced two
// on __consumer_offsets after broker bounces and network faults (Kafka
// 4.4, transaction.version 2): four partitions stopped for good.
//
// The remedy Kafka documents is an abort marker written for the open
// transaction (kafka-transactions.sh abort). The executor does it itself,
// for the partitions it depends on, once such a partition has made no
// progress for a while. Aborting loses nothing: the pending offsets were
// never committed, so their intents are decided again against the view,
// and an open transaction its coordinator still runs is never touched.

// hangingAge is how long a transaction must have been open on a
// partition before it can be judged hanging: far beyond any transaction
// timeout this executor uses, so only a transaction the coordinator has
// forgotten qualifies.
func (e *Executor) hangingAge() time.Duration { return 3 * e.cfg.TransactionTimeout }

// stalledAfter is how long an owned partition may return no record before
// the executor looks for hanging transactions; an idle partition costs one
// read-only admin request per interval.
func (e *Executor) stalledAfter() time.Duration { return 2 * e.cfg.TransactionTimeout }

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

// abortHanging finds and aborts the hanging transactions on the given
// partitions. It returns how many it aborted.
func (e *Executor) abortHanging(ctx context.Context, set kadm.TopicsSet) (int, error) {
	described, err := e.adm.DescribeProducers(ctx, set)
	if err != nil {
		return 0, err
	}
	cands := hangingCandidates(described, time.Now(), e.hangingAge())
	if len(cands) == 0 {
		return 0, nil
	}
	pids := make([]int64, 0, len(cands))
	for _, c := range cands {
		pids = append(pids, c.producerID)
	}
	listed, err := e.adm.ListTransactions(ctx, pids, nil)
	if err != nil {
		return 0, err
	}
	running := map[int64]bool{}
	for _, t := range listed {
		if runningStates[t.State] {
			running[t.ProducerID] = true
		}
	}
	aborted := 0
	for _, c := range cands {
		if running[c.producerID] {
			continue
		}
		m := kadm.TxnMarkers{ProducerID: c.producerID, ProducerEpoch: c.producerEpoch, CoordinatorEpoch: c.coordinatorEpoch,
			Topics: kadm.TopicsSet{c.topic: {c.partition: {}}}}
		if _, err := e.adm.WriteTxnMarkers(ctx, m); err != nil {
			e.cfg.Logger.Error("aborting a hanging transaction failed", "topic", c.topic, "partition", c.partition, "producer_id", c.producerID, "err", err)
			continue
		}
		aborted++
		e.m.HangingAborted.Inc()
		e.cfg.Logger.Warn("aborted a hanging transaction (open on the partition, unknown to its coordinator)",
			"topic", c.topic, "partition", c.partition, "producer_id", c.producerID, "producer_epoch", c.producerEpoch,
			"open_since", c.lastWrite)
	}
	return aborted, nil
}

// watchStalls runs on the loop: when an owned partition has returned no
// record for stalledAfter, it looks for hanging transactions. The clock of
// a partition is not reset by a rebalance: under constant rebalancing a
// partition that never moves must still be noticed.
func (e *Executor) watchStalls(ctx context.Context) {
	now := time.Now()
	stalled := false
	for p := range e.owned {
		last, ok := e.lastRecord[p]
		if !ok {
			e.lastRecord[p] = now
			continue
		}
		stalled = stalled || now.Sub(last) >= e.stalledAfter()
	}
	if stalled {
		e.checkHanging(ctx)
	}
}

// checkHanging looks for hanging transactions on every partition of the
// intents, control and events topics and on the group's offsets topic, at
// most once per stalledAfter. All of them, not only the stalled one: one
// forgotten transaction spans every partition its tick wrote (events,
// results, forwarded intents, offsets), and must be aborted on each.
// Callers: watchStalls, and a restore whose events partition has a
// transaction that will not settle (records are polled, but no tick can
// use them).
func (e *Executor) checkHanging(ctx context.Context) {
	now := time.Now()
	if now.Sub(e.lastStallCheck) < e.stalledAfter() {
		return
	}
	e.lastStallCheck = now
	set := kadm.TopicsSet{}
	for p := int32(0); p < e.layout.Partitions; p++ {
		for _, t := range []string{e.cfg.Names.Intents, e.cfg.Names.Control, e.cfg.Names.Events} {
			set.Add(t, p)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := e.addOffsetsTopic(cctx, set); err != nil {
		e.cfg.Logger.Debug("stall check: offsets topic not described", "err", err)
	}
	if _, err := e.abortHanging(cctx, set); err != nil {
		e.cfg.Logger.Debug("stall check failed", "err", err)
	}
}

// addOffsetsTopic adds every partition of __consumer_offsets: which one
// holds this group depends on the broker's partition count, and a
// described partition without open transactions costs nothing.
func (e *Executor) addOffsetsTopic(ctx context.Context, set kadm.TopicsSet) error {
	const offsetsTopic = "__consumer_offsets"
	td, err := e.adm.ListTopicsWithInternal(ctx, offsetsTopic)
	if err != nil {
		return err
	}
	t, ok := td[offsetsTopic]
	if !ok || t.Err != nil {
		return err
	}
	for p := range t.Partitions {
		set.Add(offsetsTopic, p)
	}
	return nil
}
