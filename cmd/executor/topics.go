package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/internal/cli"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topicadmin"
)

// topicsMain creates the topics (when missing) and checks them, as the
// executor does at start, then exits. On a secured cluster the executor's
// role may not create topics: an operator runs this once with a principal
// that may (admin), before the first executor starts.
func topicsMain(args []string) error {
	fs := flag.NewFlagSet("executor topics", flag.ContinueOnError)
	kafka := cli.KafkaFlags(fs)
	partitions := fs.Int("partitions", 12, "partitions of intents, control and events")
	replication := fs.Int("replication-factor", -1, "replication factor of new topics (-1: the broker's default)")
	toolsFile := fs.String("tools", "", "the executor's tool file: the event log's retention must cover every tool's retention + pending_ttl (empty: the demo tools' 24h)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return err
	}
	minRetention, err := eventRetention(*toolsFile)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	conn, err := kafka.Connect(ctx)
	if err != nil {
		return err
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(conn.Seeds...)}, conn.Opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	layout, err := topicadmin.Ensure(ctx, kadm.NewClient(cl), kafka.Names(),
		topicadmin.Settings{Partitions: int32(*partitions), ReplicationFactor: int16(*replication), MinEventRetention: minRetention})
	if err != nil {
		return err
	}
	fmt.Printf("topics under %q ready: %d partitions (intents, control, events), results %d, dead letters %d\n",
		kafka.Prefix, layout.Partitions, layout.ResultPartitions, layout.DeadLetterPartitions)
	return nil
}

// eventRetention is the shortest event log retention the tools need
// (executor.Config does the same at start).
func eventRetention(path string) (time.Duration, error) {
	if path == "" {
		return 24 * time.Hour, nil
	}
	cfg, err := tools.Load(path)
	if err != nil {
		return 0, err
	}
	var d time.Duration
	for _, s := range cfg.Tools {
		d = max(d, s.Retention+s.PendingTTL)
	}
	return d, nil
}
