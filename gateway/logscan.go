package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// lookupSettle bounds the wait for open transactions on the events
// partition (as eventlog.Target does for a restore): a read must see
// every event committed before it started.
const lookupSettle = 10 * time.Second

// scanLog folds the committed events of (tenant, key) from its partition
// of the event log, from the log's start, as the executor's restore does
// (saga.Apply), and returns the key's record: nil when the key has none or
// its retention passed. A start that moves during the scan begins it
// again (eventlog.ReadFromStart): a fold that resumed past events it never
// saw could answer a key in doubt that has settled, or the reverse. It
// reads and never writes: nothing is executed.
//
// It is the fallback of a lookup an executor does not answer (a version
// before lookups, which rejects the type): its cost is a scan of one
// partition, where a lookup costs the executor one read of its view.
func (g *Gateway) scanLog(ctx context.Context, tenant, key string) (*saga.Record, error) {
	rk := wire.RoutingKey(tenant, key)
	p, err := g.eventsPartition(ctx, rk)
	if err != nil {
		return nil, err
	}
	to, err := eventlog.Target(ctx, g.adm, g.names.Events, p, lookupSettle)
	if err != nil {
		return nil, err
	}
	var rec *saga.Record
	err = eventlog.ReadFromStart(ctx, g.cfg.Brokers, g.adm, g.names.Events, p, to, func() { rec = nil }, func(_ int64, r *kgo.Record) error {
		if string(r.Key) != rk {
			return nil
		}
		ev, err := eventlog.Decode(r.Value)
		if err != nil {
			return fmt.Errorf("gateway: event of %s: %w", rk, err)
		}
		rec = saga.Apply(rec, *ev)
		return nil
	}, g.kafkaOpts()...)
	if err != nil {
		return nil, err
	}
	if expired(rec, time.Now().UnixMilli()) {
		return nil, nil
	}
	return rec, nil
}

// expired mirrors the saga's rule: a settled (or not executed) key whose
// retention passed is free again; a key in doubt never expires. The
// executor writes the expired event lazily, so the log alone may not say.
func expired(rec *saga.Record, now int64) bool {
	if rec == nil {
		return true
	}
	return rec.ExpiresAt != 0 && (rec.Status.Settled() || rec.Status == saga.StatusNotExecuted) && now >= rec.ExpiresAt
}

func (g *Gateway) eventsPartition(ctx context.Context, rk string) (int32, error) {
	td, err := g.adm.ListTopics(ctx, g.names.Events)
	if err != nil {
		return 0, fmt.Errorf("gateway: list %s: %w", g.names.Events, err)
	}
	d, ok := td[g.names.Events]
	if !ok || d.Err != nil || len(d.Partitions) == 0 {
		return 0, fmt.Errorf("gateway: topic %s is not there (%v)", g.names.Events, d.Err)
	}
	return wire.Partition(rk, int32(len(d.Partitions))), nil
}
