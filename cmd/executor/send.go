package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/wire"
	"github.com/atmostonce/toolexec/wire/jsonview"
)

// sendUsage is executor send --help above its flags.
func sendUsage() string {
	return `Usage: executor send --tool T --key K [--args JSON] [--tenant X] [--wait 30s] [flags]

Produces one intent and prints its answer as one JSON document on stdout:
the terminal answer, or, when --wait ends with the key in doubt, the
pending answer. While it waits, a pending answer is noted on stderr.

Exit status, by the answer's status:
` + exitTable()
}

// sendMain produces one intent and prints its answer as JSON.
func sendMain(args []string) error {
	fs := cli.FlagSet("executor send", sendUsage())
	kafka := cli.KafkaFlags(fs)
	in := wire.Intent{}
	fs.StringVar(&in.Tool, "tool", "", "tool name (required for a call)")
	fs.StringVar(&in.Key, "key", "", "idempotency key (required)")
	fs.StringVar(&in.Tenant, "tenant", wire.DefaultTenant, "tenant")
	fs.StringVar(&in.ID, "id", "", "intent id (default: a fresh one)")
	fs.StringVar(&in.Type, "type", wire.TypeCall, "call or compensate")
	fs.StringVar(&in.ReplyTo, "reply-to", "", "topic for the answer (default: the results topic)")
	argsJSON := fs.String("args", "{}", "arguments as a JSON object, e.g. '{\"amount\":5}'")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for the answer (a leader election on a cluster takes about the broker session timeout, 9 s by default)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if in.Key == "" || (in.Tool == "" && in.Type == wire.TypeCall) {
		return cli.Usagef("send: --key and --tool are required")
	}
	var err error
	if in.Args, err = argsObject(*argsJSON); err != nil {
		return cli.Usagef("send: %w", err)
	}
	return send(kafka, in, *wait)
}

// argsObject parses --args, which must be a JSON object: a tool's
// arguments are named.
func argsObject(s string) (map[string]any, error) {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return nil, fmt.Errorf("--args is not JSON (%v); give an object, e.g. --args '{\"amount\":5}'", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("--args must be a JSON object, e.g. --args '{\"amount\":5}', not %s", jsonKind(v))
	}
	return obj, nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

func send(kafka *cli.Kafka, in wire.Intent, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	conn, err := kafka.Connect(ctx)
	if err != nil {
		return err
	}
	noted := false
	cl, err := client.New(ctx, client.Config{Brokers: conn.Seeds, Prefix: kafka.Prefix, ReplyTo: in.ReplyTo, ClientOpts: conn.Opts,
		OnPending: func(r *wire.Result) {
			if !noted {
				noted = true
				fmt.Fprintf(os.Stderr, "executor: %s is pending%s; waiting up to --wait %s for its final answer\n", in.Key, pendingCode(r), wait)
			}
		}})
	if err != nil {
		return err
	}
	defer cl.Close()
	p, err := cl.Start(ctx, in)
	if err != nil {
		return err // not sent
	}
	defer p.Close()
	res, err := p.Wait(ctx)
	return answer(os.Stdout, in, wait, res, err)
}

// answer prints the one JSON document of send and returns the exit
// status it stands for (sendExits), with what a pending or missing answer
// means.
func answer(w io.Writer, in wire.Intent, wait time.Duration, res *wire.Result, err error) error {
	if res != nil {
		_ = cli.PrintJSON(w, jsonview.Value(res))
	}
	switch {
	case errors.Is(err, client.ErrApprovalPending):
		return &cli.ExitStatus{Code: exitAwaitingApproval, Err: awaitingApproval(in)}
	case errors.Is(err, client.ErrInDoubt):
		return &cli.ExitStatus{Code: exitInDoubt, Err: inDoubt(in, res)}
	case err != nil && res == nil && errors.Is(err, context.DeadlineExceeded):
		return &cli.ExitStatus{Code: exitNoAnswer, Err: fmt.Errorf("no answer for %s within --wait %s. The intent was sent: its call may still be queued or running. "+
			"It will not run twice: send the same key and arguments again (with a longer --wait) for its answer", in.Key, wait)}
	case err != nil:
		return err
	}
	code, ok := exitOf(res.Status)
	if !ok {
		return fmt.Errorf("an answer with status %q, which this command does not know", res.Status)
	}
	if code == 0 {
		return nil
	}
	return &cli.ExitStatus{Code: code}
}

// inDoubt says what a key left pending means and what happens next.
func inDoubt(in wire.Intent, res *wire.Result) error {
	return fmt.Errorf("%s is in doubt: its call may have reached %s, and no answer came back. It will not run again. "+
		"The reconciler settles the key once the tool's pending_ttl has passed (by the tool's class: a retry with the same "+
		"downstream key, a probe or a compensation), or escalates it to an operator (reconciler pending lists it, "+
		"reconciler resolve settles it). Send the same key and arguments again for the final answer",
		in.Key, res.Tool)
}

// awaitingApproval says what a key awaiting approval means and how it is
// decided.
func awaitingApproval(in wire.Intent) error {
	return fmt.Errorf("%s waits for a person's approval: nothing ran. Approve it (it then runs once, with these arguments): "+
		"reconciler approve --key %s --tenant %s --reason TEXT, or deny it (reconciler deny); send the same key and arguments "+
		"again for the outcome", in.Key, in.Key, in.Tenant)
}

// pendingCode is " (in_doubt)" for a pending answer with that code.
func pendingCode(r *wire.Result) string {
	if r.Error == nil || r.Error.Code == "" {
		return ""
	}
	return " (" + r.Error.Code + ")"
}

func printJSON(v any) {
	_ = cli.PrintJSON(os.Stdout, jsonview.Value(v))
}
