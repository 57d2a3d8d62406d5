package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// baseline is the cost of Kafka exactly-once alone: a GroupTransactSession
// that consumes the intents topic and produces one answer per record in
// the transaction that commits the record's offset. No state, no tool, no
// dedupe. It polls, bounds and times out like the executor's loop
// (executor/loop.go), so that the difference between the two is the
// executor's own work: decide, events, Pebble, dispatch.
type baseline struct {
	sess        *kgo.GroupTransactSession
	names       topics.Names
	resultParts int32

	records, txns, aborts atomic.Int64
	endNanos              atomic.Int64 // time spent in End
}

func newBaseline(ctx context.Context, o memberOpts) (*baseline, error) {
	b := &baseline{names: topics.NamesWithPrefix(o.prefix)}
	sess, err := kgo.NewGroupTransactSession(append(seedOpts(o.brokers),
		kgo.ConsumerGroup(o.group),
		kgo.ConsumeTopics(b.names.Intents),
		kgo.TransactionalID(o.group+"-"+randHex(6)),
		kgo.TransactionTimeout(20*time.Second),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(10*time.Second),
		kgo.HeartbeatInterval(2500*time.Millisecond),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		// As the executor's session (executor/txn): a produce refused with
		// CONCURRENT_TRANSACTIONS is retried after a metadata refresh, which
		// franz-go's default holds off for up to 5 s.
		kgo.MetadataMinAge(100*time.Millisecond),
	)...)
	if err != nil {
		return nil, fmt.Errorf("baseline client: %w", err)
	}
	b.sess = sess
	td, err := kadm.NewClient(sess.Client()).ListTopics(ctx, b.names.Results)
	if err != nil || len(td[b.names.Results].Partitions) == 0 {
		sess.Close()
		return nil, fmt.Errorf("baseline: topic %s: %v", b.names.Results, err)
	}
	b.resultParts = int32(len(td[b.names.Results].Partitions))
	return b, nil
}

func (b *baseline) run(ctx context.Context) error {
	for ctx.Err() == nil {
		if err := b.iteration(ctx); err != nil {
			return err
		}
	}
	return nil
}

// iteration is one poll and, if it returned records, one transaction.
func (b *baseline) iteration(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, executor.PollWait)
	fs := b.sess.PollRecords(pctx, executor.DefaultMaxPollRecords)
	cancel()
	defer b.sess.AllowRebalance()
	if fs.NumRecords() == 0 {
		return nil
	}
	if err := b.sess.Begin(); err != nil {
		return fmt.Errorf("baseline: begin: %w", err)
	}
	fs.EachRecord(func(r *kgo.Record) { b.sess.Produce(ctx, b.answer(r), nil) })
	start := time.Now()
	committed, err := b.sess.End(context.WithoutCancel(ctx), kgo.TryCommit)
	b.endNanos.Add(int64(time.Since(start)))
	if err != nil {
		return b.recover(err)
	}
	if !committed {
		b.aborts.Add(1)
		return nil
	}
	b.txns.Add(1)
	b.records.Add(int64(fs.NumRecords()))
	return nil
}

// recover aborts after a failed End, as the executor does (the commit's
// result is unknown; the abort bumps the epoch). The records are polled
// again.
func (b *baseline) recover(cause error) error {
	b.aborts.Add(1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := b.sess.Client().EndTransaction(ctx, kgo.TryAbort); err != nil {
		return fmt.Errorf("baseline: end failed (%w) and the abort too: %w", cause, err)
	}
	return nil
}

// answer decodes the intent (the wire contract, like any consumer would)
// and answers it as succeeded.
func (b *baseline) answer(r *kgo.Record) *kgo.Record {
	res := &wire.Result{Status: codes.StatusSucceeded}
	in, rej := wire.DecodeIntent(r.Value, r.Key, wire.FromIntents)
	if rej != nil {
		res.IntentID, res.Tenant, res.Key, res.Status = rej.ID, rej.Tenant, rej.Key, codes.StatusRejected
	} else {
		res.IntentID, res.Tenant, res.Key, res.Tool = in.ID, in.Tenant, in.Key, in.Tool
	}
	v, _ := wire.EncodeResult(res)
	return &kgo.Record{Topic: b.names.Results, Partition: wire.Partition(string(r.Key), b.resultParts), Key: r.Key, Value: v}
}

func (b *baseline) counters() counters {
	var c counters
	c.processFigures()
	c.Intents, c.Txns, c.Aborts = float64(b.records.Load()), float64(b.txns.Load()), float64(b.aborts.Load())
	c.TxnInputs = c.Intents
	c.TxnSec = time.Duration(b.endNanos.Load()).Seconds()
	return c
}

func (b *baseline) close() { b.sess.Close() }
