package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"time"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/wire"
)

// resolveMain settles a key in doubt by an operator's word and prints the
// executor's answer (resolved, or rejected with the reason).
func resolveMain(args []string) error {
	fs := cli.FlagSet("reconciler resolve", "Usage: reconciler resolve --key K --outcome succeeded|failed|not_executed [--result JSON] [--reason TEXT] [--force] [flags]\n\nSettles a key in doubt by an operator's word and prints the executor's answer (exit 1 when it is rejected).")
	kafka := cli.KafkaFlags(fs)
	req := reconciler.ResolveRequest{}
	fs.StringVar(&req.Key, "key", "", "idempotency key (required)")
	fs.StringVar(&req.Tenant, "tenant", wire.DefaultTenant, "tenant")
	fs.StringVar(&req.Outcome, "outcome", "", "succeeded, failed or not_executed (a compensation: compensated, compensation_failed, not_executed)")
	result := fs.String("result", "", "the call's result as JSON (answered to every waiting intent)")
	errCode := fs.String("error-code", "", "the call's error code (with --outcome failed)")
	errMsg := fs.String("error-message", "", "the call's error message")
	fs.StringVar(&req.By, "by", currentUser(), "who settles the key (recorded in the event log)")
	fs.StringVar(&req.Reason, "reason", "settled by an operator", "why (recorded in the event log)")
	fs.BoolVar(&req.Force, "force", false, "settle the key even though its call may still reach the tool (its pending_ttl has not passed); recorded as forced")
	timeout := fs.Duration("timeout", 30*time.Second, "how long to wait for the executor's answer")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if req.Key == "" || req.Outcome == "" {
		return errors.New("resolve: --key and --outcome are required")
	}
	if *result != "" {
		if err := json.Unmarshal([]byte(*result), &req.Result); err != nil {
			return fmt.Errorf("resolve: --result must be JSON: %w", err)
		}
	}
	if *errCode != "" || *errMsg != "" {
		req.Err = &wire.ErrorInfo{Code: *errCode, Message: *errMsg}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if err := connect(ctx, kafka, &req); err != nil {
		return err
	}
	res, err := sendCommand(ctx, req)
	switch {
	case errors.Is(err, reconciler.ErrRejected) && reconciler.StillLanding(res):
		return errors.New("the executor refused the resolve: the key's call may still reach its tool until its pending_ttl passes " +
			"(its answer above says how long). Wait and resolve again, or, if you know the call cannot land any more, " +
			"add --force (recorded as forced in the audit trail)")
	case errors.Is(err, reconciler.ErrRejected):
		return errors.New("the executor rejected the resolve; its answer above says why")
	}
	return err
}

// connect checks the connection and names the cluster in req.
func connect(ctx context.Context, kafka *cli.Kafka, req *reconciler.ResolveRequest) error {
	conn, err := kafka.Connect(ctx)
	if err != nil {
		return err
	}
	req.Brokers, req.Names, req.ClientOpts = conn.Seeds, kafka.Names(), conn.Opts
	return nil
}

// sendCommand sends req and prints the executor's answer, when one came.
func sendCommand(ctx context.Context, req reconciler.ResolveRequest) (*wire.Result, error) {
	res, err := reconciler.Resolve(ctx, req)
	if res != nil {
		_ = cli.PrintJSON(os.Stdout, res)
	}
	return res, err
}

// currentUser is the default --by: the operator's login name.
func currentUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "operator"
}
