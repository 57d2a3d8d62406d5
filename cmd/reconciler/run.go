package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topics"
)

type runFlags struct {
	brokers, toolsFile, dataDir, httpAddr, prefix, group, by string
	policy                                                   reconciler.Policy
	scan, session                                            time.Duration
	maxConcurrent                                            int
}

func parseRunFlags(args []string) (*runFlags, error) {
	f := &runFlags{}
	fs := flag.NewFlagSet("reconciler", flag.ContinueOnError)
	fs.StringVar(&f.brokers, "brokers", "127.0.0.1:9092", "comma-separated Kafka seed brokers")
	fs.StringVar(&f.toolsFile, "tools", "", "the executor's tool configuration YAML (required)")
	fs.StringVar(&f.dataDir, "data-dir", "./data-reconciler", "directory of the reconciler's Pebble view")
	fs.StringVar(&f.httpAddr, "http-addr", "127.0.0.1:9465", "serves /metrics, /healthz, /readyz and /pending")
	fs.StringVar(&f.prefix, "topic-prefix", topics.DefaultPrefix, "prefix of the topic names")
	fs.StringVar(&f.group, "group", "tool-reconciler", "consumer group of the reconcilers")
	fs.StringVar(&f.by, "by", "reconciler", "author recorded on every command")
	fs.IntVar(&f.policy.MaxAttempts, "max-attempts", 8, "failed rounds of an investigation before it is escalated")
	fs.DurationVar(&f.policy.BackoffBase, "backoff", 2*time.Second, "wait after the first failed round; doubles per round")
	fs.DurationVar(&f.policy.BackoffCap, "backoff-cap", 5*time.Minute, "longest wait between rounds")
	fs.DurationVar(&f.policy.CommandTimeout, "command-timeout", time.Minute, "how long a sent command may take to show in the event log")
	fs.DurationVar(&f.scan, "scan-interval", time.Second, "how often keys in doubt are examined")
	fs.DurationVar(&f.session, "session-timeout", 10*time.Second, "group session timeout")
	fs.IntVar(&f.maxConcurrent, "max-concurrent", 16, "retries and probes running at once")
	if err := fs.Parse(args); err != nil {
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
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := tools.Load(f.toolsFile)
	if err != nil {
		return err
	}
	reg, err := tools.FromConfig(cfg, nil, nil)
	if err != nil {
		return err
	}
	return serve(ctx, f, reg, log)
}

func serve(ctx context.Context, f *runFlags, reg *tools.Registry, log *slog.Logger) error {
	promReg := prometheus.NewRegistry()
	promReg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	rc, err := reconciler.New(ctx, reconciler.Config{
		Brokers: strings.Split(f.brokers, ","), Names: topics.NamesWithPrefix(f.prefix), Group: f.group, DataDir: f.dataDir,
		Tools: reg, By: f.by, Policy: f.policy, ScanInterval: f.scan, SessionTimeout: f.session, MaxConcurrent: f.maxConcurrent,
		Logger: log, Registerer: promReg,
	})
	if err != nil {
		return err
	}
	defer rc.Close()
	srv, err := listen(f.httpAddr, rc.Handler(promReg), log)
	if err != nil {
		return err
	}
	defer srv.Close()
	log.Info("reconciler running", "brokers", f.brokers, "group", f.group, "data_dir", f.dataDir, "http", f.httpAddr)
	err = rc.Run(ctx)
	log.Info("reconciler stopped", "err", err)
	return err
}

func listen(addr string, h http.Handler, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("http listen %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server", "err", err)
		}
	}()
	return srv, nil
}
