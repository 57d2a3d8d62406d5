package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
)

// topicsMain creates the topics (when missing) and checks them, as the
// executor does at start, then exits. On a secured cluster the executor's
// role may not create topics: an operator runs this once with a principal
// that may (admin), before the first executor starts.
//
// Topics are created with an explicit replication factor and
// min.insync.replicas (defaults 3 and 2, right for a cluster of three
// brokers or more), and every topic, new or existing, is checked against
// them as the executor checks at start. On a single broker the defaults
// become 1 and 1 (development), with a warning.
func topicsMain(args []string) error {
	fs := cli.FlagSet("executor topics", "Usage: executor topics [--tools F] [--partitions N] [--replication-factor 3] [--min-insync-replicas 2] [flags]\n\nCreates the topics that are missing and checks them all, then exits (as admin on a secured cluster).")
	kafka := cli.KafkaFlags(fs)
	partitions := fs.Int("partitions", 12, "partitions of intents, control and events")
	replication := fs.Int("replication-factor", topicadmin.Production.ReplicationFactor, "replication factor of new topics, and the least an existing one may have (1 on a single broker unless given)")
	minISR := fs.Int("min-insync-replicas", topicadmin.Production.MinInsyncReplicas, "min.insync.replicas of new topics, and the least an existing one may have (1 on a single broker unless given)")
	toolsFile := fs.String("tools", "", "the executor's tool file: the event log's retention must cover every tool's retention + pending_ttl (empty: the demo tools' 24h)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	var allowWeak bool
	cli.AllowWeakDurabilityFlag(fs, &allowWeak)
	if err := cli.Parse(fs, args); err != nil {
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
	adm := kadm.NewClient(cl)
	req, err := topicsRequirement(ctx, adm, fs, *replication, *minISR)
	if err != nil {
		return err
	}
	layout, err := topicadmin.Ensure(ctx, adm, kafka.Names(), topicadmin.Settings{Partitions: int32(*partitions),
		ReplicationFactor: int16(req.ReplicationFactor), MinInsyncReplicas: req.MinInsyncReplicas, MinEventRetention: minRetention})
	if err != nil {
		return err
	}
	if err := checkTopicsDurability(ctx, adm, kafka.Names(), req, allowWeak); err != nil {
		return err
	}
	fmt.Printf("topics under %q ready: %d partitions (intents, control, events), results %d, dead letters %d, replication factor %d, min.insync.replicas %d\n",
		kafka.Prefix, layout.Partitions, layout.ResultPartitions, layout.DeadLetterPartitions, req.ReplicationFactor, req.MinInsyncReplicas)
	return nil
}

// topicsRequirement is the replication asked for: the flags, except on a
// single broker where a flag not given falls to 1 (nothing to replicate to).
func topicsRequirement(ctx context.Context, adm *kadm.Client, fs *flag.FlagSet, rf, minISR int) (topicadmin.Requirement, error) {
	md, err := adm.BrokerMetadata(ctx)
	if err != nil {
		return topicadmin.Requirement{}, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if len(md.Brokers) == 1 {
		if !given["replication-factor"] {
			rf = 1
		}
		if !given["min-insync-replicas"] {
			minISR = 1
		}
		fmt.Fprintf(os.Stderr, "executor topics: a single broker (development): replication factor %d, min.insync.replicas %d\n", rf, minISR)
	}
	if rf < 1 || minISR < 1 || minISR > rf {
		return topicadmin.Requirement{}, fmt.Errorf("--replication-factor %d and --min-insync-replicas %d: want 1 <= min ISR <= replication factor", rf, minISR)
	}
	return topicadmin.Requirement{ReplicationFactor: rf, MinInsyncReplicas: minISR}, nil
}

// checkTopicsDurability checks every topic against req, as the executor
// checks at start against topicadmin.Production.
func checkTopicsDurability(ctx context.Context, adm *kadm.Client, n topics.Names, req topicadmin.Requirement, allowWeak bool) error {
	d, err := topicadmin.ReadDurability(ctx, adm, append(n.All(), n.Meta)...)
	if err != nil {
		return err
	}
	w := d.Weaknesses(req)
	switch {
	case len(w) == 0:
		return nil
	case allowWeak:
		fmt.Fprintf(os.Stderr, "executor topics: --allow-weak-durability: %s\n", strings.Join(w, "; "))
		return nil
	}
	return fmt.Errorf("%w: %s (fix them, or pass --allow-weak-durability)", topicadmin.ErrWeakDurability, strings.Join(w, "; "))
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
