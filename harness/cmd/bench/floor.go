package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// floor measures the Kafka primitives one call through the executor is
// made of, on the run's broker, one round trip at a time: a produce
// (acks=all) and its read_committed consume; one transaction (begin,
// produce, commit) and the read_committed consume of its record. A new key
// needs a hop and two transactions, a replay a hop and one: what the
// executor adds is measured against these, taken in the same run.
//
// The consumer reads with the consumer settings the executor and the
// gateway use (consumeOpts), so that a setting lowered there lowers the
// floor too, and the floor is the limit of this Kafka with these settings.
type floor struct {
	topic   string
	prod    *kgo.Client // idempotent, acks=all, no linger
	txn     *kgo.Client // transactional, no linger
	cons    *kgo.Client // read_committed, from the end of topic
	arrived chan arrival
	done    chan struct{}
}

// arrival is one record the floor's consumer received, and when.
type arrival struct {
	seq string
	at  time.Time
}

// floorTopic is the floor's topic under the run's prefix: one partition.
const floorTopic = "floor"

func (b *bench) newFloor(ctx context.Context) (*floor, error) {
	topic := b.br.runPrefix + floorTopic
	if err := b.br.newTopic(ctx, topic, 1); err != nil {
		return nil, err
	}
	f := &floor{topic: topic, arrived: make(chan arrival, 16), done: make(chan struct{})}
	var err error
	if f.prod, err = kgo.NewClient(append(seedOpts(b.br.seeds), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0))...); err != nil {
		return nil, err
	}
	if f.txn, err = kgo.NewClient(append(seedOpts(b.br.seeds), kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(0),
		kgo.TransactionalID(b.br.runPrefix+"floor-txn"))...); err != nil {
		f.close()
		return nil, err
	}
	opts := append(seedOpts(b.br.seeds), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtEnd()}}))
	if f.cons, err = kgo.NewClient(append(opts, consumeOpts()...)...); err != nil {
		f.close()
		return nil, err
	}
	go f.read()
	return f, nil
}

func (f *floor) close() {
	for _, c := range []*kgo.Client{f.prod, f.txn} {
		if c != nil {
			c.Close()
		}
	}
	if f.cons != nil {
		f.cons.Close()
		<-f.done
	}
}

func (f *floor) read() {
	defer close(f.done)
	for {
		fs := f.cons.PollFetches(context.Background())
		if fs.IsClientClosed() {
			return
		}
		now := time.Now()
		fs.EachRecord(func(r *kgo.Record) { f.arrived <- arrival{seq: string(r.Value), at: now} })
	}
}

// errFloorTimeout: a floor record did not arrive within floorWait.
var errFloorTimeout = errors.New("floor: record not consumed in time")

// floorWait bounds one round trip of the floor.
const floorWait = 30 * time.Second

// produce is one produce and its consume: from the produce call to the
// record's arrival at the read_committed consumer.
func (f *floor) produce(ctx context.Context, seq int) (time.Duration, error) {
	s := "p" + strconv.Itoa(seq)
	start := time.Now()
	var perr error
	f.prod.Produce(ctx, &kgo.Record{Value: []byte(s)}, func(_ *kgo.Record, err error) { perr = err })
	at, err := f.await(ctx, s)
	if err == nil {
		err = perr
	}
	return at.Sub(start), err
}

// transaction is one transaction (begin, produce one record, commit) and
// the read_committed consume of its record: from the begin to the
// record's arrival.
func (f *floor) transaction(ctx context.Context, seq int) (time.Duration, error) {
	s := "t" + strconv.Itoa(seq)
	start := time.Now()
	if err := f.txn.BeginTransaction(); err != nil {
		return 0, err
	}
	f.txn.Produce(ctx, &kgo.Record{Value: []byte(s)}, nil)
	if err := f.txn.Flush(ctx); err != nil {
		return 0, err
	}
	if err := f.txn.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return 0, fmt.Errorf("floor: commit: %w", err)
	}
	at, err := f.await(ctx, s)
	return at.Sub(start), err
}

// await waits for the record s; records of earlier, abandoned round trips
// are skipped.
func (f *floor) await(ctx context.Context, s string) (time.Time, error) {
	t := time.NewTimer(floorWait)
	defer t.Stop()
	for {
		select {
		case a := <-f.arrived:
			if a.seq == s {
				return a.at, nil
			}
		case <-t.C:
			return time.Time{}, fmt.Errorf("%w: %s", errFloorTimeout, s)
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		}
	}
}
