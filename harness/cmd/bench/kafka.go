package main

import (
	"context"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/cli"
)

// kafkaConfigFile is --kafka-config (TLS, SASL), and kafkaOpts its kgo
// options: set once in main (and in a member, from its own flag) before
// any client is made, read-only afterwards. A package variable, not a
// field threaded through every scenario, because every client of the
// bench and of its members takes the same settings.
var (
	kafkaConfigFile string
	kafkaOpts       []kgo.Opt
)

// loadKafkaConfig reads --kafka-config, checks it against the seeds and
// sets kafkaOpts. Without a file it does nothing.
func loadKafkaConfig(ctx context.Context, file string, seeds []string) error {
	if file == "" {
		return nil
	}
	conn, err := cli.Connect(ctx, joinSeeds(seeds), file, "", nil)
	if err != nil {
		return err
	}
	kafkaConfigFile, kafkaOpts = file, conn.Opts
	return nil
}

// seedOpts are the options every bench client starts with.
func seedOpts(seeds []string) []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(seeds...)}, kafkaOpts...)
}

func joinSeeds(seeds []string) string {
	out := ""
	for i, s := range seeds {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}

// consumeOpts are the consumer settings of the bench's own read_committed
// consumers that stand for a product client: the floor's consumer and the
// client.Call path's (both take the settings the product's consumers
// take).
func consumeOpts() []kgo.Opt { return nil }
