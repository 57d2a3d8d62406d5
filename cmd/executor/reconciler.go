package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/console"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topics"
)

// reconcilerFlags configure the reconciler embedded in the executor
// process: on by default, so the first run shows the whole system.
type reconcilerFlags struct {
	on                    bool
	httpAddr, group       string
	operators, consoleURL string
	consoleKafka          string
	factGrace             time.Duration
}

func addReconcilerFlags(fs *flag.FlagSet) *reconcilerFlags {
	f := &reconcilerFlags{}
	fs.BoolVar(&f.on, "reconciler", true, "also run the reconciler in this process (data under <data-dir>/reconciler); false when cmd/reconciler runs separately")
	fs.StringVar(&f.httpAddr, "reconciler-http-addr", "127.0.0.1:9465", "the embedded reconciler's /metrics, /healthz, /readyz, and the operator console (/console) with /pending behind its sign-in; empty: not served")
	fs.StringVar(&f.operators, "operators", "", "the operator console's operators file (the tenants file's format, reloaded on SIGHUP); empty: on a loopback --reconciler-http-addr one operator, you, with the token in <data-dir>/console.token; elsewhere the console is off")
	fs.StringVar(&f.consoleKafka, "console-kafka-config", "", "Kafka client properties of the console's own clients (event-log reads, actions and their answers on the results topic): the operator role's on a secured cluster; empty: --kafka-config")
	fs.StringVar(&f.consoleURL, "console-url", "", "where operators reach the console (e.g. https://ops.example.com): alert annotations link there, and an https URL makes the session cookie Secure")
	fs.StringVar(&f.group, "reconciler-group", "tool-reconciler", "consumer group of the embedded reconciler")
	fs.DurationVar(&f.factGrace, "reconciler-fact-grace", 90*time.Second, "how long after a key's deadline, and after the end of an outage, the embedded reconciler's escalation waits for the executors' facts (cmd/reconciler's --fact-grace)")
	return f
}

// serveReconciler serves the embedded reconciler's HTTP endpoints and the
// operator console (with the operators of --operators, else, on a
// loopback address, the generated operator of defaultOperator); the
// returned stop closes them.
func serveReconciler(ctx context.Context, f *runFlags, rc *reconciler.Reconciler, conn *cli.Conn, reg *tools.Registry, promReg *prometheus.Registry, front *front, log *slog.Logger) (func(), error) {
	if front == nil {
		return func() {}, nil
	}
	ops, kept, err := defaultOperator(f, log)
	if err != nil {
		return nil, err
	}
	con, stopConsole, err := console.Open(ctx, console.Options{OperatorsFile: f.rec.operators, Operators: ops, ExternalURL: f.rec.consoleURL,
		KafkaConfigFile: f.rec.consoleKafka, Registerer: promReg, Logger: log, Disjoint: f.tokens,
		Backend: &console.ReconcilerBackend{Reconciler: rc, Tools: reg.Specs(), Brokers: conn.Seeds, Names: topics.NamesWithPrefix(f.prefix), ClientOpts: conn.Opts}})
	if err != nil {
		return nil, err
	}
	mux := rc.Handler(promReg)
	con.Mount(mux)
	front.Serve(mux)
	switch {
	case kept != nil:
		fmt.Print(consoleBanner(f.rec.httpAddr, *kept))
	case con.On():
		log.Info("operator console", "url", "http://"+f.rec.httpAddr+"/console", "operators", f.rec.operators)
	default:
		fmt.Println(console.OffHint)
	}
	return func() { _ = front.srv.Close(); stopConsole() }, nil
}

// startReconciler runs the embedded reconciler next to the executor (the
// topics exist by now: executor.New ensured them), with the executor's
// tools and its own metrics registry. The returned stop ends it and waits
// for it (bounded), and releases it: it is called on a normal stop, after
// ctx ended, and when a later part of the start (the gateway's) failed,
// while ctx still runs.
func startReconciler(ctx context.Context, f *runFlags, conn *cli.Conn, reg *tools.Registry, front *front, log *slog.Logger) (func(), error) {
	if !f.rec.on {
		return func() {}, nil
	}
	log = log.With("component", "reconciler")
	promReg := prometheus.NewRegistry()
	rc, err := reconciler.New(ctx, reconciler.Config{
		Brokers: conn.Seeds, Names: topics.NamesWithPrefix(f.prefix), Group: f.rec.group,
		DataDir: filepath.Join(f.dataDir, "reconciler"), Tools: reg, Logger: log, Registerer: promReg, AllowWeakDurability: f.allowWeak, TracerProvider: f.tracer,
		FactGrace:  f.rec.factGrace,
		ClientOpts: append([]kgo.Opt{kgo.ClientID(f.clientID + "-reconciler")}, conn.Opts...),
	})
	if err != nil {
		return nil, err
	}
	stopHTTP, err := serveReconciler(ctx, f, rc, conn, reg, promReg, front, log)
	if err != nil {
		rc.Close()
		return nil, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rc.Run(runCtx) }()
	log.Info("embedded reconciler running", "group", f.rec.group, "http", f.rec.httpAddr)
	return func() {
		cancel()
		select {
		case err := <-done:
			log.Info("embedded reconciler stopped", "err", err)
		case <-time.After(30 * time.Second):
			log.Error("embedded reconciler did not stop in 30s")
		}
		stopHTTP()
		rc.Close()
	}, nil
}
