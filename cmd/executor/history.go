package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/internal/cli"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// historyMain prints a key's audit trail: every committed event of the key,
// oldest first, one JSON object each.
func historyMain(args []string) error {
	fs := flag.NewFlagSet("executor history", flag.ContinueOnError)
	kafka := cli.KafkaFlags(fs)
	key := fs.String("key", "", "idempotency key (required)")
	tenant := fs.String("tenant", wire.DefaultTenant, "tenant")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *key == "" {
		return errors.New("history: --key is required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := kafka.Connect(ctx)
	if err != nil {
		return err
	}
	evs, err := History(ctx, conn.Seeds, kafka.Names(), *tenant, *key, conn.Opts...)
	if err != nil {
		return err
	}
	for _, ev := range evs {
		printJSON(eventView(ev))
	}
	if len(evs) == 0 {
		fmt.Println("no events for", wire.RoutingKey(*tenant, *key))
	}
	return nil
}

// History reads the committed events of one key from its events partition;
// opts (TLS, SASL) apply to every client it makes.
func History(ctx context.Context, seeds []string, n topics.Names, tenant, key string, opts ...kgo.Opt) ([]*saga.Event, error) {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	td, err := adm.ListTopics(ctx, n.Events)
	if err != nil || td[n.Events].Err != nil {
		return nil, fmt.Errorf("history: topic %s: %v %v", n.Events, err, td[n.Events].Err)
	}
	rk := wire.RoutingKey(tenant, key)
	p := wire.Partition(rk, int32(len(td[n.Events].Partitions)))
	end, err := eventlog.Target(ctx, adm, n.Events, p, 30*time.Second)
	if err != nil {
		return nil, err
	}
	var out []*saga.Event
	_, err = eventlog.Read(ctx, seeds, n.Events, p, 0, end, func(_ int64, r *kgo.Record) error {
		if string(r.Key) != rk {
			return nil
		}
		ev, err := eventlog.Decode(r.Value)
		if err != nil {
			return err
		}
		out = append(out, ev)
		return nil
	}, opts...)
	return out, err
}

func eventView(ev *saga.Event) map[string]any {
	m := map[string]any{"at": time.UnixMilli(ev.At).UTC().Format(time.RFC3339Nano), "event": ev.Kind.String(), "tenant": ev.Tenant, "key": ev.Key}
	put := func(k string, v any, ok bool) {
		if ok {
			m[k] = v
		}
	}
	put("intent_id", ev.IntentID, ev.IntentID != "")
	put("tool", ev.Tool, ev.Tool != "")
	put("call_id", ev.CallID, ev.CallID != "")
	put("status", ev.Status.String(), ev.Status != saga.StatusNone)
	put("attempt", ev.Attempt, ev.Attempt != 0)
	put("error", ev.Err, ev.Err != nil)
	put("downstream_key", ev.DownstreamKey, ev.DownstreamKey != "")
	put("by", ev.By, ev.By != "")
	put("forced", true, ev.Forced)
	put("reason", ev.Reason, ev.Reason != "")
	put("run_id", ev.RunID, ev.RunID != "")
	put("reply_to", waiterReply(ev), waiterReply(ev) != "")
	if len(ev.Result) > 0 {
		var v any
		if msgpack.Unmarshal(ev.Result, &v) == nil {
			m["result"] = jsonable(v)
		}
	}
	return m
}

func waiterReply(ev *saga.Event) string {
	if ev.Waiter == nil {
		return ""
	}
	return ev.Waiter.ReplyTo
}
