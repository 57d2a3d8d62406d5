package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/wire"
)

// historyMain prints a key's audit trail: every committed event of the key,
// oldest first, one JSON object each.
func historyMain(args []string) error {
	fs := cli.FlagSet("executor history", "Usage: executor history --key K [--tenant X] [flags]\n\nPrints the key's audit trail from the event log, oldest first, one JSON object per event.")
	kafka := cli.KafkaFlags(fs)
	key := fs.String("key", "", "idempotency key (required)")
	tenant := fs.String("tenant", wire.DefaultTenant, "tenant")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if err := cli.Parse(fs, args); err != nil {
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
		printJSON(eventlog.AuditView(ev))
	}
	if len(evs) == 0 {
		fmt.Println("no events for", wire.RoutingKey(*tenant, *key))
	}
	return nil
}
