// Command chaos checks the promise under faults: it runs real executor
// processes (built with -tags faults), a reconciler, a ledger tool server
// and a load of agent-like intents, injects faults (kill -9, kills at each
// protocol point, zombies, scale changes, broker bounces, network faults,
// state loss, hostile records; with --cluster, on a three-node cluster:
// kills of partition leaders and coordinators, paused nodes, rolling
// restarts, a node cut from the executors, full disks), lets the
// reconciler settle, and checks at
// most one effect per downstream key and per call of a key, one terminal
// answer per intent, nothing lost, that every key in doubt was settled by
// its class's path, and that no hostile record stalled a member. The last line of output is
// one JSON object; the exit status is 1 on any violation, 2 when the
// harness itself failed. See docs/RELIABILITY.md.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/atmostonce/toolexec/harness/chaos"
)

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := chaos.Run(ctx, cfg, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chaos:", err)
		os.Exit(2)
	}
	b, _ := json.Marshal(rep)
	fmt.Println(string(b))
	if len(rep.Violations) > 0 {
		os.Exit(1)
	}
}

func parseFlags(args []string) (chaos.Config, error) {
	var cfg chaos.Config
	fs := flag.NewFlagSet("chaos", flag.ContinueOnError)
	fs.StringVar(&cfg.Brokers, "brokers", "127.0.0.1:19092", "the broker to use with --own-broker=false (the deploy/kafka broker by default)")
	fs.StringVar(&cfg.KafkaConfig, "kafka-config", "", "Kafka client properties (TLS, SASL) for every client and process of the run; needs --own-broker=false and a principal that may create the run's topics")
	fs.BoolVar(&cfg.OwnBroker, "own-broker", true, "start a private broker (deploy/kafka/start on --broker-port, run dir --broker-run-dir), bounce it, stop it at the end and wipe it unless --keep; false: use --brokers and skip broker bounces (they would disturb others)")
	fs.IntVar(&cfg.BrokerPort, "broker-port", 29192, "client port of the private broker; its controller listens on the next port")
	fs.StringVar(&cfg.BrokerRunDir, "broker-run-dir", "", "run dir of the private broker or cluster (wiped at start, and at the end unless --keep; default /tmp/chaos-kafka, with --cluster /tmp/chaos-kafka-cluster)")
	fs.StringVar(&cfg.BrokerFeatures, "broker-features", "", "Kafka feature levels fixed when the private broker or cluster is formatted, space-separated (e.g. transaction.version=1; default: the version's own, transaction.version=2 on Kafka 4.4)")
	fs.BoolVar(&cfg.Cluster, "cluster", false, "run on a private three-node cluster (deploy/kafka/start --cluster; node n on --broker-port+(n-1)*100 and the three ports after it) with its fault kinds: leader_kill, txn_coordinator_kill, group_coordinator_kill, node_pause, rolling_restart, node_cut, disk_full (no broker_bounce)")
	fs.BoolVar(&cfg.DiskFaults, "disk-faults", true, "with --cluster: mount a tmpfs on each executor's data dir and fill it (disk_full); needs root")
	fs.StringVar(&cfg.DiskSize, "disk-size", "256m", "with --disk-faults: the size of each executor's tmpfs")
	fs.DurationVar(&cfg.Duration, "duration", 2*time.Minute, "how long the load and the faults run")
	fs.DurationVar(&cfg.Settle, "settle", 3*time.Minute, "longest wait for the reconciler to settle everything afterwards")
	seed := fs.Uint64("seed", 0, "seed of every random choice (load, faults); 0 picks one from the clock; printed at start")
	fs.IntVar(&cfg.Executors, "executors", 3, "executor processes in the group (scale faults go one above and one below)")
	fs.IntVar(&cfg.Partitions, "partitions", 6, "partitions of the run's topics")
	fs.Float64Var(&cfg.Rate, "rate", 40, "intents per second, bursts on top")
	fs.DurationVar(&cfg.FaultGap, "fault-gap", 4*time.Second, "mean pause between two faults")
	drop := fs.Uint("drop-every", 25, "the ledger performs the effect and drops the connection for about one key in N (0: never)")
	only := fs.String("only", "", "comma-separated fault kinds to inject (kill, zombie, scale, broker_bounce, network, state_loss, hostile; with --cluster also the cluster's kinds); empty: all")
	fs.BoolVar(&cfg.RequireAll, "require-all-faults", false, "count a fault kind never injected as a violation (CI: proves the short run covered them all)")
	fs.StringVar(&cfg.WorkDir, "work-dir", "", "binaries, data dirs and process logs (default: a temp dir, deleted unless --keep)")
	fs.BoolVar(&cfg.Keep, "keep", false, "keep the work dir (process logs) at the end")
	fs.StringVar(&cfg.Repo, "repo", "", "module root (default: found from the current directory)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	cfg.Seed, cfg.DropEvery = *seed, uint32(*drop)
	if *only != "" {
		cfg.Only = strings.Split(*only, ",")
	}
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano() % 1_000_000_000)
	}
	if cfg.Executors < 2 || cfg.Partitions < 1 || cfg.Rate <= 0 || cfg.Duration <= 0 || cfg.FaultGap <= 0 {
		return cfg, fmt.Errorf("need --executors >= 2, --partitions >= 1, positive --rate, --duration and --fault-gap")
	}
	if cfg.Repo == "" {
		root, err := moduleRoot()
		if err != nil {
			return cfg, err
		}
		cfg.Repo = root
	}
	if cfg.BrokerRunDir == "" {
		cfg.BrokerRunDir = map[bool]string{false: "/tmp/chaos-kafka", true: "/tmp/chaos-kafka-cluster"}[cfg.Cluster]
	}
	cfg.DiskFaults = cfg.DiskFaults && cfg.Cluster
	if !filepath.IsAbs(cfg.BrokerRunDir) {
		return cfg, fmt.Errorf("--broker-run-dir must be absolute")
	}
	return cfg, nil
}

// moduleRoot asks the go command where go.mod is.
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside the module; give --repo")
	}
	return filepath.Dir(gomod), nil
}
