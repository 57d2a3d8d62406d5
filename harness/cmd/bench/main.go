// Command bench measures what the executor's safety costs: every scenario
// runs the executor and, where it has a counterpart, a baseline on the same
// broker in the same run, so that ratios hold on a shared, noisy machine
// where absolute times do not. docs/PERFORMANCE.md explains the scenarios,
// the figures and where the time goes.
//
//	go run ./harness/cmd/bench                       # in-process kfake broker
//	go run ./harness/cmd/bench --quick               # under 2 minutes, fewer keys
//	go run ./harness/cmd/bench --brokers 127.0.0.1:19092
//
// The baseline is a franz-go GroupTransactSession that consumes the intents
// topic and produces one answer per record, with no state and no tool: the
// cost of Kafka exactly-once alone.
//
// Each member (executor or baseline) runs in a child process, the same
// binary re-executed with the hidden subcommand __member, so that its peak
// RSS and CPU time are its own and not the broker's or the load
// generator's. The parent drives the load over Kafka and asks the child for
// its counters (Prometheus collectors, VmHWM, CPU time) over stdin/stdout.
//
// Output: a table on stdout, then one JSON object as the last line.
// Progress goes to stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == memberCommand {
		if err := runMember(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "bench member:", err)
			os.Exit(1)
		}
		return
	}
	cfg, err := parseFlags(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := loadKafkaConfig(ctx, cfg.kafkaConfig, cfg.brokers); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}
