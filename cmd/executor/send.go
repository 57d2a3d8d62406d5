package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/atmostonce/toolexec/client"
	"github.com/atmostonce/toolexec/internal/cli"
	"github.com/atmostonce/toolexec/internal/jsonview"
	"github.com/atmostonce/toolexec/wire"
)

// sendMain produces one intent and prints its answer as JSON.
func sendMain(args []string) error {
	fs := flag.NewFlagSet("executor send", flag.ContinueOnError)
	kafka := cli.KafkaFlags(fs)
	in := wire.Intent{}
	fs.StringVar(&in.Tool, "tool", "", "tool name (required for a call)")
	fs.StringVar(&in.Key, "key", "", "idempotency key (required)")
	fs.StringVar(&in.Tenant, "tenant", wire.DefaultTenant, "tenant")
	fs.StringVar(&in.ID, "id", "", "intent id (default: a fresh one)")
	fs.StringVar(&in.Type, "type", wire.TypeCall, "call or compensate")
	fs.StringVar(&in.ReplyTo, "reply-to", "", "topic for the answer (default: the results topic)")
	argsJSON := fs.String("args", "{}", "arguments as a JSON object")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the answer (a leader election on a cluster takes about the broker session timeout, 9 s by default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if in.Key == "" || (in.Tool == "" && in.Type == wire.TypeCall) {
		return errors.New("send: --key and --tool are required")
	}
	if err := json.Unmarshal([]byte(*argsJSON), &in.Args); err != nil {
		return fmt.Errorf("send: --args must be a JSON object: %w", err)
	}
	return send(kafka, in, *wait)
}

func send(kafka *cli.Kafka, in wire.Intent, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, err := kafka.Connect(ctx)
	if err != nil {
		return err
	}
	cl, err := client.New(ctx, client.Config{Brokers: conn.Seeds, Prefix: kafka.Prefix, ReplyTo: in.ReplyTo, ClientOpts: conn.Opts,
		OnPending: func(r *wire.Result) { printJSON(r) }})
	if err != nil {
		return err
	}
	defer cl.Close()
	res, err := cl.Call(ctx, in)
	if res != nil && (err == nil || !errors.Is(err, client.ErrInDoubt)) {
		printJSON(res)
	}
	if errors.Is(err, client.ErrApprovalPending) {
		return fmt.Errorf("%w: nothing ran. Approve it (it then runs once, with these arguments): reconciler approve --key %s --tenant %s --reason TEXT, "+
			"or deny it; send the same key and arguments again for the outcome", err, in.Key, in.Tenant)
	}
	return err
}

func printJSON(v any) {
	_ = cli.PrintJSON(os.Stdout, jsonview.Value(v))
}
