package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/internal/cli"
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
		printJSON(eventlog.AuditView(ev))
	}
	if len(evs) == 0 {
		fmt.Println("no events for", wire.RoutingKey(*tenant, *key))
	}
	return nil
}
