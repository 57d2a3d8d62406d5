package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/internal/gctune"
	"github.com/atmostonce/toolexec/internal/httpserve"
	"github.com/atmostonce/toolexec/internal/tokenfile"
	"github.com/atmostonce/toolexec/kafkaconfig"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
)

type runFlags struct {
	brokers, kafkaConfig, embeddedAddr, dataDir, toolsFile, httpAddr, prefix, group string
	partitions                                                                      int
	drain, session, rebalance, txnTimeout, outage, snapshot                         time.Duration
	txnID, clientID                                                                 string
	allowWeak, embeddedSync                                                         bool
	rec                                                                             *reconcilerFlags
	gw                                                                              *gatewayFlags
	tracer                                                                          trace.TracerProvider // from OTEL_*: the embedded gateway and reconciler share it
	// tokens keeps the embedded gateway's tenants and the console's
	// operators apart, at the start and at every SIGHUP.
	tokens *tokenfile.Disjoint
}

func parseRunFlags(args []string) (*runFlags, error) {
	f := &runFlags{tokens: tokenfile.NewDisjoint()}
	fs := cli.FlagSet("executor", usage)
	fs.StringVar(&f.brokers, "brokers", "", "comma-separated Kafka seed brokers; empty (and no --kafka-config) starts the embedded broker")
	cli.KafkaConfigFlag(fs, &f.kafkaConfig)
	fs.StringVar(&f.embeddedAddr, "embedded-addr", "127.0.0.1:9092", "listen address of the embedded broker")
	fs.BoolVar(&f.embeddedSync, "embedded-sync", false, "the embedded broker fsyncs every write, so that a committed call also survives a power loss (default: it survives a crash of this process, not of the machine; see README.md for the cost)")
	cli.AllowWeakDurabilityFlag(fs, &f.allowWeak)
	fs.StringVar(&f.dataDir, "data-dir", "./data", "directory for the Pebble view (and the embedded broker's log)")
	fs.StringVar(&f.toolsFile, "tools", "", "tool configuration YAML; empty loads the built-in demo tools")
	fs.StringVar(&f.httpAddr, "http-addr", "127.0.0.1:9464", "serves /metrics, /healthz and /readyz")
	fs.StringVar(&f.prefix, "topic-prefix", topics.DefaultPrefix, "prefix of the topic names")
	fs.StringVar(&f.group, "group", "tool-executor", "consumer group of the executors")
	fs.IntVar(&f.partitions, "partitions", 12, "partitions of intents, control and events when they are created")
	fs.DurationVar(&f.drain, "drain-timeout", 10*time.Second, "how long calls in flight get on shutdown or rebalance")
	fs.DurationVar(&f.session, "session-timeout", 10*time.Second, "group session timeout: how long a silent member keeps its partitions")
	fs.DurationVar(&f.rebalance, "rebalance-timeout", 30*time.Second, "group rebalance timeout; must exceed --drain-timeout")
	fs.DurationVar(&f.txnTimeout, "transaction-timeout", 20*time.Second, "Kafka transaction timeout")
	fs.DurationVar(&f.outage, "broker-outage", 2*time.Minute, "how long one start attempt, or a transaction's begin or abort, waits for an unreachable broker; past it the executor starts over (the process stays up, not ready, until the broker is back)")
	fs.StringVar(&f.clientID, "client-id", "toolexec-executor", "Kafka client id, shown in group descriptions")
	fs.StringVar(&f.txnID, "transactional-id", "", "stable transactional id of this instance (default: random per process)")
	fs.DurationVar(&f.snapshot, "snapshot-interval", 0, "how often every record is restated in the event log (default: a quarter of the event log's retention, at most 24h)")
	f.rec = addReconcilerFlags(fs)
	f.gw = addGatewayFlags(fs)
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	return f, nil
}

func runMain(args []string) error {
	f, err := parseRunFlags(args)
	if err != nil {
		return err
	}
	hup, stopHup := cli.Hangups()
	defer stopHup()
	if err := f.gw.check(); err != nil {
		return err
	}
	ls, err := bindListeners(f)
	if err != nil {
		return err
	}
	defer ls.close()
	log := cli.Logger()
	log.Info("go collector", "gogc", gctune.Apply())
	ctx, stop := cli.SignalContext()
	defer stop()
	web := httpserve.ServeProcess(ls.http, log)
	defer web.Server.Close()
	fronts := serveStarting(ls, log)
	defer fronts.close()
	conn, closeBroker, err := connectOrEmbedded(ctx, f, ls.embedded, log)
	if err != nil {
		return err
	}
	defer closeBroker()
	reg, err := loadTools(f.toolsFile, log)
	if err != nil {
		return err
	}
	return serve(ctx, f, conn, reg, web, fronts, hup, log)
}

// embedded reports whether the process runs the embedded broker: neither
// --brokers nor --kafka-config names a cluster.
func (f *runFlags) embedded() bool { return f.brokers == "" && f.kafkaConfig == "" }

// connectOrEmbedded reaches the cluster of --brokers and --kafka-config
// (checked at once: a TLS or SASL failure ends the start), or starts the
// embedded broker on ln when neither is given.
func connectOrEmbedded(ctx context.Context, f *runFlags, ln net.Listener, log *slog.Logger) (*cli.Conn, func(), error) {
	if !f.embedded() {
		conn, err := cli.Connect(ctx, f.brokers, f.kafkaConfig, "", log)
		return conn, func() {}, err
	}
	seeds, closeBroker, err := startEmbedded(ln, filepath.Join(f.dataDir, "kafka"), int32(f.partitions), f.embeddedSync, log)
	if err != nil {
		return nil, nil, err
	}
	cfg, _ := kafkaconfig.Load("")
	return &cli.Conn{Seeds: seeds, Config: cfg}, closeBroker, nil
}

func loadTools(path string, log *slog.Logger) (*tools.Registry, error) {
	if path == "" {
		log.Info("no --tools given: loading the built-in demo tools", "tools", "demo.echo, demo.refund, demo.lost_reply, demo.lost_refund")
		return demoTools()
	}
	cfg, err := tools.Load(path)
	if err != nil {
		return nil, err
	}
	return tools.FromConfig(cfg, nil, nil)
}

func serve(ctx context.Context, f *runFlags, conn *cli.Conn, reg *tools.Registry, web *httpserve.Process, fronts *fronts, hup <-chan os.Signal, log *slog.Logger) error {
	tp, stopTracing, err := cli.Tracing(ctx, "toolexec-executor", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	f.tracer = tp
	promReg := web.Registry
	cfg := executor.Config{
		Brokers: conn.Seeds, Connect: conn.Opts, Names: topics.NamesWithPrefix(f.prefix), Group: f.group, DataDir: f.dataDir,
		Tools: reg, DrainTimeout: f.drain, SessionTimeout: f.session, RebalanceTimeout: f.rebalance, TransactionTimeout: f.txnTimeout, BrokerOutage: f.outage, TransactionalID: f.txnID, SnapshotInterval: f.snapshot, Logger: log, Registerer: promReg,
		Settings: topicadmin.Settings{Partitions: int32(f.partitions)}, AllowWeakDurability: f.allowWeak, Hooks: hooksFromEnv(log),
		ClientOpts: []kgo.Opt{kgo.ClientID(f.clientID)}, KafkaLogLevel: cli.KafkaLogLevel(os.Getenv("TOOLEXEC_KAFKA_LOG")), TracerProvider: tp,
		Turned: func() { web.Live.Beat(executorLoop) },
	}
	ex, undo, err := startExecutor(ctx, f, cfg, web, log)
	if err != nil {
		return err
	}
	watchRepairAuthorization(ctx, conn, promReg, log)
	stopReconciler, err := startReconciler(ctx, f, conn, reg, fronts.reconciler, log)
	if err != nil {
		ex.Close()
		return err
	}
	defer stopReconciler()
	stopGateway, err := startGateway(ctx, f, conn, reg, promReg, fronts.gateway, hup, log)
	if err != nil {
		ex.Close()
		return err
	}
	defer stopGateway()
	log.Info("executor running", "brokers", strings.Join(conn.Seeds, ","), "kafka", conn.Config.String(), "group", f.group, "data_dir", f.dataDir, "http", f.httpAddr)
	for {
		err = runExecutor(ctx, f, ex, web)
		undo()
		if err == nil || ctx.Err() != nil || !executor.Outage(err) {
			log.Info("executor stopped", "err", err)
			return err
		}
		// A broker outage outlasted --broker-outage inside a transaction:
		// this executor is done, as a restarted process's would be, but
		// the process stays up (not ready) and starts a new one, which
		// waits for the broker like a first start. Exiting instead put
		// every pod into CrashLoopBackOff, whose back-off kept them down
		// for minutes after the broker was back.
		web.Restarting()
		log.Warn("executor stopped by a broker outage; starting a new one (not ready meanwhile)", "err", err)
		if ex, undo, err = startExecutor(ctx, f, cfg, web, log); err != nil {
			return err
		}
	}
}

// executorLoop names the executor's loop in the process's liveness.
const executorLoop = "executor loop"

// startExecutor starts an executor, waiting for the topics and the broker
// as long as it takes (each attempt up to --broker-outage); undo
// unregisters its metrics once it is closed.
func startExecutor(ctx context.Context, f *runFlags, cfg executor.Config, web *httpserve.Process, log *slog.Logger) (*executor.Executor, func(), error) {
	var ex *executor.Executor
	undo, err := cli.StartPatiently(ctx, cli.Start{What: "executor start", Attempt: f.outage, Log: log, Reg: web.Registry, Live: web.Live,
		// The topics may be missing for a while on a first install, where
		// the topics Job creates them as the members start (deploy/k8s),
		// and the broker may be away for longer than an attempt.
		Passing: func(err error) bool {
			return (errors.Is(err, topicadmin.ErrNotCreated) || executor.Outage(err)) && !cli.Lasting(err)
		}},
		func(ctx context.Context, r prometheus.Registerer) (err error) {
			cfg.Registerer = r
			ex, err = executor.New(ctx, cfg)
			return err
		})
	return ex, undo, err
}

// runExecutor serves ex's readiness and runs it, its loop watched by the
// process's liveness, until it stops; then closes it.
func runExecutor(ctx context.Context, f *runFlags, ex *executor.Executor, web *httpserve.Process) error {
	web.Live.Loop(executorLoop, executorStall(f))
	defer web.Live.Stop(executorLoop)
	defer ex.Close()
	web.Serve(httpserve.Health(web.Registry, ex.Ready))
	return ex.Run(ctx)
}

// executorStall is how long the executor's loop may go without a turn
// before /healthz fails and the kubelet restarts the process. A turn may
// legitimately wait out the broker three times (begin, abort, offsets:
// each up to --broker-outage, each try up to --transaction-timeout) and
// a drain; restores turn at every fetch. Two minutes more for a loaded
// node. Only a loop that is stuck goes past it: 9m10s with the defaults.
func executorStall(f *runFlags) time.Duration {
	return 3*(f.outage+f.txnTimeout) + f.drain + 2*time.Minute
}
