package integration

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

type executorConfig = executor.Config

// history reads a key's committed events.
func history(t *testing.T, e *env, tenant, key string) []*saga.Event {
	t.Helper()
	return keyEvents(t, e.adm, brokers, e.names.Events, e.partitions, wire.RoutingKey(tenant, key))
}

// keyEvents reads the events of routing key rk from the events topic,
// once every transaction open on its partition has ended; extra options
// go to the reading client (its isolation level, by default
// read_committed).
func keyEvents(t *testing.T, adm *kadm.Client, seeds []string, topic string, partitions int32, rk string, extra ...kgo.Opt) []*saga.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := wire.Partition(rk, partitions)
	end, err := eventlog.Target(ctx, adm, topic, p, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var out []*saga.Event
	_, err = eventlog.Read(ctx, seeds, topic, p, 0, end, func(_ int64, r *kgo.Record) error {
		if string(r.Key) != rk {
			return nil
		}
		ev, err := eventlog.Decode(r.Value)
		if err == nil {
			out = append(out, ev)
		}
		return err
	}, extra...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readCommitted reads every committed record of every partition of topic,
// each partition up to the high watermark it had when the read began, once
// every transaction open then has ended (eventlog.Target). Unlike a
// background collector, its result is a snapshot that includes every
// transaction committed before the call.
func readCommitted(t *testing.T, e *env, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ends, err := e.adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []*kgo.Record
	ends.Each(func(o kadm.ListedOffset) {
		end, err := eventlog.Target(ctx, e.adm, topic, o.Partition, 20*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, err = eventlog.Read(ctx, brokers, topic, o.Partition, 0, end, func(_ int64, r *kgo.Record) error {
			out = append(out, r)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
	return out
}
