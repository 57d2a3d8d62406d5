package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/internal/cli"
	"github.com/atmostonce/toolexec/saga"
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
	evs, err := eventlog.History(ctx, conn.Seeds, kafka.Names().Events, *tenant, *key, conn.Opts...)
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
