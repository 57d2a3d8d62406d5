package main

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/console"
	"github.com/atmostonce/toolexec/internal/httpserve"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topicadmin"
)

type runFlags struct {
	kafka                                   *cli.Kafka
	toolsFile, dataDir, httpAddr, group, by string
	operators, consoleURL, consoleKafka     string
	policy                                  reconciler.Policy
	scan, session, outage, factGrace        time.Duration
	maxConcurrent, maxScan                  int
	allowWeak                               bool
}

func parseRunFlags(args []string) (*runFlags, error) {
	f := &runFlags{}
	fs := cli.FlagSet("reconciler", usage)
	f.kafka = cli.KafkaFlags(fs)
	fs.StringVar(&f.toolsFile, "tools", "", "the executor's tool configuration YAML (required)")
	fs.StringVar(&f.dataDir, "data-dir", "./data-reconciler", "directory of the reconciler's Pebble view")
	fs.StringVar(&f.httpAddr, "http-addr", "127.0.0.1:9465", "serves /metrics, /healthz, /readyz, and the operator console (/console) with /pending behind its sign-in")
	fs.StringVar(&f.operators, "operators", "", "the operator console's operators file (the tenants file's format, reloaded on SIGHUP); empty: the console is off")
	fs.StringVar(&f.consoleKafka, "console-kafka-config", "", "Kafka client properties of the console's own clients (event-log reads, actions and their answers on the results topic): the operator role's on a secured cluster; empty: --kafka-config")
	fs.StringVar(&f.consoleURL, "console-url", "", "where operators reach the console (e.g. https://ops.example.com): alert annotations link there, and an https URL makes the session cookie Secure")
	fs.StringVar(&f.group, "group", "tool-reconciler", "consumer group of the reconcilers")
	fs.StringVar(&f.by, "by", "reconciler", "author recorded on every command")
	fs.IntVar(&f.policy.MaxAttempts, "max-attempts", 8, "failed rounds of an investigation (ambiguous answers, commands that never land, compensations that come back not_executed) before it is escalated")
	fs.DurationVar(&f.policy.BackoffBase, "backoff", 2*time.Second, "wait after the first failed round; doubles per round")
	fs.DurationVar(&f.policy.BackoffCap, "backoff-cap", 5*time.Minute, "longest wait between rounds")
	fs.DurationVar(&f.policy.CommandTimeout, "command-timeout", time.Minute, "how long a sent command may take to show in the event log")
	fs.DurationVar(&f.scan, "scan-interval", time.Second, "how often keys in doubt are examined")
	fs.DurationVar(&f.session, "session-timeout", 10*time.Second, "group session timeout")
	fs.DurationVar(&f.factGrace, "fact-grace", 90*time.Second, "how long after a key's deadline, and after the end of an outage, an escalation waits for the executors' facts (the call's outcome, or that it was never sent): at least the recovery bound of docs/DESIGN.md plus 5 s")
	fs.DurationVar(&f.outage, "broker-outage", 2*time.Minute, "how long one start attempt waits for a broker that does not answer and for the executor's topics; the reconciler tries again until they are there (up, not ready)")
	fs.IntVar(&f.maxConcurrent, "max-concurrent", 16, "retries and probes running at once")
	cli.AllowWeakDurabilityFlag(fs, &f.allowWeak)
	fs.IntVar(&f.maxScan, "max-scan", 100_000, "keys in doubt examined per partition per scan; each scan goes on after the last key the previous one examined")
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	if f.toolsFile == "" {
		// Why no demo default: the demo tools live inside the executor
		// process; a retry from another process would reach a tool that
		// never saw the first call. Use the executor's embedded reconciler.
		return nil, errors.New("--tools is required (the executor's tool file); the demo tools are reconciled by the executor's embedded reconciler")
	}
	return f, nil
}

func runMain(args []string) error {
	f, err := parseRunFlags(args)
	if err != nil {
		return err
	}
	log := cli.Logger()
	ctx, stop := cli.SignalContext()
	defer stop()
	ln, err := cli.Listen("--http-addr", f.httpAddr, "")
	if err != nil {
		return err
	}
	web := httpserve.ServeProcess(ln, log)
	defer web.Server.Close()
	conn, err := cli.Connect(ctx, f.kafka.Brokers, f.kafka.ConfigFile, cli.DefaultBrokers, log)
	if err != nil {
		return err
	}
	cfg, err := tools.Load(f.toolsFile)
	if err != nil {
		return err
	}
	reg, err := tools.FromConfig(cfg, nil, nil)
	if err != nil {
		return err
	}
	return serve(ctx, f, conn, reg, web, log)
}

func serve(ctx context.Context, f *runFlags, conn *cli.Conn, reg *tools.Registry, web *httpserve.Process, log *slog.Logger) error {
	tp, stopTracing, err := cli.Tracing(ctx, "toolexec-reconciler", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	promReg := web.Registry
	var rc *reconciler.Reconciler
	_, err = cli.StartPatiently(ctx, cli.Start{What: "reconciler start", Attempt: f.outage, Log: log, Reg: promReg, Live: web.Live,
		Passing: func(err error) bool { return !cli.Lasting(err, reconciler.ErrConfig, topicadmin.ErrWeakDurability) }},
		func(ctx context.Context, r prometheus.Registerer) (err error) {
			rc, err = reconciler.New(ctx, reconciler.Config{
				Brokers: conn.Seeds, Names: f.kafka.Names(), Group: f.group, DataDir: f.dataDir,
				Tools: reg, By: f.by, Policy: f.policy, ScanInterval: f.scan, SessionTimeout: f.session, MaxConcurrent: f.maxConcurrent,
				MaxScan: f.maxScan, AllowWeakDurability: f.allowWeak, FactGrace: f.factGrace,
				Logger: log, Registerer: r, ClientOpts: conn.Opts, TracerProvider: tp, Turned: func() { web.Live.Beat(reconcilerLoop) },
			})
			return err
		})
	if err != nil {
		return err
	}
	defer rc.Close()
	con, stopConsole, err := console.Open(ctx, console.Options{OperatorsFile: f.operators, ExternalURL: f.consoleURL, KafkaConfigFile: f.consoleKafka,
		Registerer: promReg, Logger: log,
		Backend: &console.ReconcilerBackend{Reconciler: rc, Tools: reg.Specs(), Brokers: conn.Seeds, Names: f.kafka.Names(), ClientOpts: conn.Opts}})
	if err != nil {
		return err
	}
	defer stopConsole()
	mux := rc.Handler(promReg)
	con.Mount(mux)
	web.Serve(mux)
	if !con.On() {
		log.Info(console.OffHint)
	}
	log.Info("reconciler running", "brokers", strings.Join(conn.Seeds, ","), "kafka", conn.Config.String(), "group", f.group, "data_dir", f.dataDir, "http", f.httpAddr)
	web.Live.Loop(reconcilerLoop, reconcilerStall(f))
	err = rc.Run(ctx)
	web.Live.Stop(reconcilerLoop)
	log.Info("reconciler stopped", "err", err)
	return err
}

// reconcilerLoop names the reconciler's loop in the process's liveness.
const reconcilerLoop = "reconciler loop"

// reconcilerStall is how long the reconciler's loop may go without a turn
// before /healthz fails and the kubelet restarts the process: a turn polls
// for at most a quarter second, measures the lag for at most 5 s, and may
// read the event log across a gap while the broker is away (up to
// --broker-outage, twice); two minutes more for a loaded node. 6 minutes
// with the defaults.
func reconcilerStall(f *runFlags) time.Duration {
	return 2*f.outage + 2*time.Minute
}
