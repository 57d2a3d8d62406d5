package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// approveMain approves a key awaiting approval: its call runs, once, with
// the arguments its first intent recorded.
func approveMain(args []string) error { return decideMain(wire.TypeApprove, args) }

// denyMain denies a key awaiting approval: it ends failed
// (approval_denied), replayed as such.
func denyMain(args []string) error { return decideMain(wire.TypeDeny, args) }

// decideMain reads the key's request from the event log, shows what is
// decided (the tool and the arguments as it will receive them), and sends
// the command bound to that request and its arguments' digest, so that it
// cannot decide another request of the key.
func decideMain(typ string, args []string) error {
	fs := cli.FlagSet("reconciler "+typ, fmt.Sprintf("Usage: reconciler %s --key K --reason TEXT [--tenant T] [--by NAME] [flags]\n\n"+
		"Reads the key's request for approval from the event log, prints the tool and the arguments (stderr), "+
		"sends the %s bound to that request and its arguments' digest, and prints the executor's answer "+
		"(exit 1 when it is refused).", typ, typ))
	kafka := cli.KafkaFlags(fs)
	req := reconciler.ResolveRequest{Type: typ}
	fs.StringVar(&req.Key, "key", "", "idempotency key (required)")
	fs.StringVar(&req.Tenant, "tenant", wire.DefaultTenant, "tenant")
	fs.StringVar(&req.Reason, "reason", "", "why (required; recorded in the event log with your name)")
	fs.StringVar(&req.By, "by", currentUser(), "who decides (recorded in the event log)")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the key's events and the executor's answer")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if req.Key == "" || req.Reason == "" {
		return cli.Usagef("%s: --key and --reason are required", typ)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := connect(ctx, kafka, &req); err != nil {
		return err
	}
	if err := bindToRequest(ctx, &req); err != nil {
		return err
	}
	_, err := sendCommand(ctx, req)
	if errors.Is(err, reconciler.ErrRejected) {
		return fmt.Errorf("the executor refused the %s; its answer above says why", typ)
	}
	return err
}

// bindToRequest reads the key's record from its events, prints the
// request on stderr and names it (call id, digest) in req.
func bindToRequest(ctx context.Context, req *reconciler.ResolveRequest) error {
	evs, err := eventlog.History(ctx, req.Brokers, req.Names.Events, req.Tenant, req.Key, req.ClientOpts...)
	if err != nil {
		return err
	}
	rec := eventlog.FoldHistory(evs)
	if rec == nil || rec.Status != saga.StatusAwaitingApproval {
		status := "without a record"
		if rec != nil {
			status = rec.Status.String()
		}
		return fmt.Errorf("%s: %s awaits no approval (it is %s)", req.Type, wire.RoutingKey(req.Tenant, req.Key), status)
	}
	row := reconciler.RowOfRequest(rec)
	argsJSON, _ := json.Marshal(row.Args)
	fmt.Fprintf(os.Stderr, "%s %s: tool %s, requested by intent %s at %s, lapses at %s\narguments (as the tool will receive them): %s\ndigest: %s\n",
		req.Type, wire.RoutingKey(req.Tenant, req.Key), row.Tool, row.CallID, utc(row.RequestedAt), utc(row.Until), argsJSON, row.ArgsDigest)
	req.CallID, req.ArgsDigest = row.CallID, row.ArgsDigest
	return nil
}

func utc(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339) }
