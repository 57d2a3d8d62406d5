package eventlog

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// historySettle bounds the wait for the key's partition's open
// transactions to settle before it is read.
const historySettle = 30 * time.Second

// History reads the committed events of one key, oldest first, from its
// partition of the events topic: a scan of the whole partition, from its
// start to its high watermark once the open transactions settled (Target;
// a start that moves during the scan begins it again, ReadFromStart).
// It is the audit trail of `executor history` and of the operator
// console's key page, and costs one partition's read per call. opts (TLS,
// SASL) apply to every client it makes. It blocks until the scan ends or
// ctx is done.
func History(ctx context.Context, seeds []string, topic, tenant, key string, opts ...kgo.Opt) ([]*saga.Event, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("eventlog: history: topic %s: %w", topic, err)
	}
	if d := td[topic]; d.Err != nil || len(d.Partitions) == 0 {
		return nil, fmt.Errorf("eventlog: history: topic %s: %v", topic, d.Err)
	}
	rk := wire.RoutingKey(tenant, key)
	p := wire.Partition(rk, int32(len(td[topic].Partitions)))
	end, err := Target(ctx, adm, topic, p, historySettle)
	if err != nil {
		return nil, err
	}
	var out []*saga.Event
	err = ReadFromStart(ctx, seeds, adm, topic, p, end, func() { out = nil }, func(_ int64, r *kgo.Record) error {
		if string(r.Key) != rk {
			return nil
		}
		ev, err := Decode(r.Value)
		if err != nil {
			return err
		}
		out = append(out, ev)
		return nil
	}, opts...)
	return out, err
}

// FoldHistory is a key's record from its events as History returns them,
// folded as the executor folds them (round and read events are about the
// partition or a read, never the record): what `history`, the console and
// `reconciler approve` show and act on. nil when the key has no record
// (never called, or expired).
func FoldHistory(evs []*saga.Event) *saga.Record {
	var rec *saga.Record
	for _, ev := range evs {
		if ev.Kind == saga.EvRound || ev.Kind.IsRead() {
			continue
		}
		rec = saga.Apply(rec, *ev)
	}
	return rec
}
