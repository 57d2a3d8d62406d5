package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/tools"
)

// pendingMain lists the keys in doubt: read from the event log (no running
// reconciler needed), completed with what the running reconciler at
// --http-addr knows (attempts, escalations, commands sent).
func pendingMain(args []string) error {
	fs := cli.FlagSet("reconciler pending", "Usage: reconciler pending [--json] [--tools F] [--http-addr ADDR] [flags]\n\nLists the keys in doubt, from the event log and the running reconciler at --http-addr.")
	kafka := cli.KafkaFlags(fs)
	toolsFile := fs.String("tools", "", "the executor's tool file, for classes and pending_ttl (optional)")
	httpAddr := fs.String("http-addr", "127.0.0.1:9465", "the running reconciler's address; empty: the event log only")
	tokenFile := fs.String("operator-token-file", "", "a file holding an operator's token (of the console's operators file): the running reconciler serves /pending to operators only; empty: the event log only")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := kafka.Connect(ctx)
	if err != nil {
		return err
	}
	opts := reconciler.LogOptions{Brokers: conn.Seeds, Names: kafka.Names(), ClientOpts: conn.Opts}
	if *toolsFile != "" {
		cfg, err := tools.Load(*toolsFile)
		if err != nil {
			return err
		}
		opts.Lookup = cfg.Lookup
	}
	token, err := operatorToken(*tokenFile)
	if err != nil {
		return err
	}
	rows, err := Pending(ctx, opts, *httpAddr, token, os.Stderr)
	if err != nil {
		return err
	}
	if *asJSON {
		return printRowsJSON(os.Stdout, rows, time.Now())
	}
	printRows(os.Stdout, rows, time.Now())
	return nil
}

// operatorToken reads an operator's token from path ("" when no path).
func operatorToken(path string) (string, error) {
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--operator-token-file: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// Pending reads the log and merges what the reconciler at httpAddr (if
// any, asked with an operator's token) reports; a reconciler that cannot
// be reached is noted on warn.
func Pending(ctx context.Context, opts reconciler.LogOptions, httpAddr, token string, warn io.Writer) ([]reconciler.Row, error) {
	rows, err := reconciler.PendingFromLog(ctx, opts)
	if err != nil || httpAddr == "" || token == "" {
		return rows, err
	}
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	live, err := reconciler.FetchRows(hctx, httpAddr, token)
	if err != nil {
		fmt.Fprintf(warn, "note: %v; the state column is what the reconciler would do, attempts are unknown\n", err)
	}
	return reconciler.Merge(rows, live), nil
}

type jsonRow struct {
	reconciler.Row
	AgeSeconds     float64 `json:"age_seconds"`
	PastTTLSeconds float64 `json:"past_ttl_seconds"`
}

func printRowsJSON(w io.Writer, rows []reconciler.Row, now time.Time) error {
	out := make([]jsonRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, jsonRow{Row: r, AgeSeconds: seconds(now.UnixMilli() - r.CalledAt), PastTTLSeconds: seconds(max(0, now.UnixMilli()-r.Deadline))})
	}
	return cli.PrintJSON(w, out)
}

// printRows prints the rows as a table. The reason is the last column and
// is printed whole: it says what an operator must do.
func printRows(w io.Writer, rows []reconciler.Row, now time.Time) {
	if len(rows) == 0 {
		fmt.Fprintln(w, "no keys in doubt")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tTOOL\tCLASS\tPHASE\tSTATUS\tAGE\tPAST TTL\tSTATE\tATTEMPTS\tWAITERS\tREASON")
	for _, r := range rows {
		past := "-"
		if d := now.UnixMilli() - r.Deadline; d >= 0 {
			past = age(d)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\n", r.RoutingKey(), r.Tool, orDash(r.Class), r.Phase, r.Status,
			age(now.UnixMilli()-r.CalledAt), past, r.State, r.Attempts, r.Waiters, r.Reason)
	}
	_ = tw.Flush()
}

func seconds(ms int64) float64 { return float64(ms) / 1000 }

func age(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Truncate(time.Second).String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
