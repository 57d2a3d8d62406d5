package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/gateway"
	"github.com/atmostonce/toolexec/internal/httpserve"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topics"
)

type flags struct {
	brokers, kafkaConfig, toolsFile, tenantsFile, httpAddr, metricsAddr, prefix, instanceID, clientID string
	callerTrace                                                                                       string
	outage, replyIdle                                                                                 time.Duration
}

func parseFlags(args []string) (*flags, error) {
	f := &flags{}
	host, _ := os.Hostname()
	fs := cli.FlagSet("gateway", usage)
	fs.StringVar(&f.brokers, "brokers", "", "comma-separated Kafka seed brokers (default: bootstrap.servers of --kafka-config, else "+cli.DefaultBrokers+")")
	fs.StringVar(&f.kafkaConfig, "kafka-config", "", "Kafka client properties file (TLS, SASL), as for the other commands")
	fs.StringVar(&f.toolsFile, "tools", "", "the executor's tool file (required)")
	fs.StringVar(&f.tenantsFile, "tenants", "", "the tenants file: bearer token hashes per tenant (required; reloaded on SIGHUP)")
	fs.StringVar(&f.httpAddr, "http-addr", "127.0.0.1:8080", "serves the API, /mcp, /healthz and /readyz to agents")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "127.0.0.1:9466", "serves /metrics (and /healthz, /readyz) apart from the agents' port: its exemplars carry trace ids; empty: not served")
	fs.StringVar(&f.callerTrace, "caller-trace", string(gateway.TraceLink), "what a caller's traceparent does: link (a trace of the gateway's own, linked to the caller's; for callers outside the trust boundary) or continue (the caller's trace goes on to the executor and the tool; for a deployment's own services)")
	fs.StringVar(&f.prefix, "topic-prefix", topics.DefaultPrefix, "prefix of the topic names")
	fs.StringVar(&f.instanceID, "instance-id", gateway.InstanceIDFrom(host), "names this instance's reply topic <prefix>gateway.<id>; keep it stable across restarts (a StatefulSet's pod name; default: the host name)")
	fs.StringVar(&f.clientID, "client-id", "toolexec-gateway", "Kafka client id")
	fs.DurationVar(&f.outage, "broker-outage", 2*time.Minute, "how long one start attempt waits for a broker that does not answer and for the executor's topics; the gateway tries again until they are there (up, not ready)")
	fs.DurationVar(&f.replyIdle, "reply-topic-idle", gateway.DefaultReplyTopicIdle, "delete the reply topics of other instances whose newest answer or heartbeat is older than this (instances gone for good); 0: never")
	if err := cli.Parse(fs, args); err != nil {
		return nil, err
	}
	switch {
	case f.toolsFile == "":
		return nil, errors.New("--tools is required (the executor's tool file)")
	case f.tenantsFile == "":
		return nil, errors.New("--tenants is required (see docs/gateway.md, The tenants file)")
	case !gateway.ValidInstanceID(f.instanceID):
		return nil, fmt.Errorf("--instance-id %q must match [a-z0-9._-]{1,64}: it names the reply topic %s", f.instanceID, gateway.ReplyTopic(f.prefix, f.instanceID))
	case f.callerTrace != string(gateway.TraceLink) && f.callerTrace != string(gateway.TraceContinue):
		return nil, fmt.Errorf("--caller-trace %q: want link or continue", f.callerTrace)
	case f.metricsAddr != "" && f.metricsAddr == f.httpAddr:
		return nil, errors.New("--metrics-addr must differ from --http-addr: /metrics is not served to agents")
	}
	return f, nil
}

func runMain(args []string) error {
	f, err := parseFlags(args)
	if err != nil {
		return err
	}
	hup, stopHup := cli.Hangups() // before the start, which can take --broker-outage
	defer stopHup()
	log := cli.Logger()
	ctx, stop := cli.SignalContext()
	defer stop()
	api, web, err := listen(f, log)
	if err != nil {
		return err
	}
	cfg, err := tools.Load(f.toolsFile)
	if err != nil {
		return err
	}
	tenants, err := gateway.LoadTenants(f.tenantsFile)
	if err != nil {
		return err
	}
	conn, err := cli.Connect(ctx, f.brokers, f.kafkaConfig, cli.DefaultBrokers, log)
	if err != nil {
		return err
	}
	tp, stopTracing, err := cli.Tracing(ctx, "toolexec-gateway", log)
	if err != nil {
		return err
	}
	defer stopTracing()
	reg := web.Registry
	var g *gateway.Gateway
	_, err = cli.StartPatiently(ctx, cli.Start{What: "gateway start", Attempt: f.outage, Log: log, Reg: reg, Live: api.Live,
		Passing: func(err error) bool { return !cli.Lasting(err, gateway.ErrConfig, gateway.ErrTenants) }},
		func(ctx context.Context, r prometheus.Registerer) (err error) {
			g, err = gateway.New(ctx, gateway.Config{
				Brokers: conn.Seeds, KafkaOpts: conn.Opts, Prefix: f.prefix, Tools: cfg.Tools, Tenants: gateway.NewTenantStore(tenants),
				InstanceID: f.instanceID, ClientID: f.clientID, ReplyTopicIdle: replyIdle(f.replyIdle), Logger: log, Registerer: r, TracerProvider: tp,
				CallerTrace: gateway.CallerTrace(f.callerTrace),
			})
			return err
		})
	if err != nil {
		return err
	}
	defer g.Close()
	stopHUP := g.ReloadOn(f.tenantsFile, hup)
	defer stopHUP()
	kafkaUp := httpserve.WatchLive(ctx, api.Live, "gateway: kafka", readyInterval, readyTimeout, g.Ping, log)
	mux := httpserve.Health(nil, kafkaUp)
	mux.Handle("/", g.Handler())
	api.Serve(mux)
	if web.Server != nil {
		web.Serve(httpserve.Health(reg, kafkaUp))
	}
	log.Info("gateway running", "http", f.httpAddr, "metrics", f.metricsAddr, "brokers", f.brokers, "reply_topic", g.ReplyTopic(),
		"tenants", len(tenants.Names()), "tools", len(cfg.Tools), "caller_trace", f.callerTrace)
	<-ctx.Done()
	err = shutdown(api.Server, log)
	if web.Server != nil {
		_ = web.Server.Close()
	}
	return err
}

// listen binds --http-addr and --metrics-addr before anything slow
// starts (cli.Listen: a busy port names its flag) and serves, from the
// process's first moment, the agents' port on --http-addr, which never
// serves /metrics (its exemplars carry the trace ids of calls, and its
// series name the tenants), and /metrics on --metrics-addr. Both answer
// as a starting process until the gateway runs.
func listen(f *flags, log *slog.Logger) (api, web *httpserve.Process, err error) {
	apiLn, err := cli.Listen("--http-addr", f.httpAddr, "")
	if err != nil {
		return nil, nil, err
	}
	var metricsLn net.Listener
	if f.metricsAddr != "" {
		if metricsLn, err = cli.Listen("--metrics-addr", f.metricsAddr, "or --metrics-addr= to serve no /metrics"); err != nil {
			apiLn.Close()
			return nil, nil, err
		}
	}
	api, web = httpserve.ServeProcessApart(apiLn, metricsLn, log)
	return api, web, nil
}

// The gateway is ready while a broker answers: without one, no call is
// produced and no answer read, so a load balancer should send its
// callers to an instance that has one. Checked every readyInterval, each
// check bounded by readyTimeout (under the probe's period).
const (
	readyInterval = 5 * time.Second
	readyTimeout  = 3 * time.Second
)

// shutdown stops taking requests and lets the waiting ones finish (their
// wait is at most MaxWait).
func shutdown(srv *http.Server, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), gateway.MaxWait+5*time.Second)
	defer cancel()
	err := srv.Shutdown(ctx)
	log.Info("gateway stopped", "err", err)
	return nil
}

// hashTokenMain prints the tenants-file form of a token.
func hashTokenMain(args []string) error {
	if len(args) != 1 || args[0] == "" {
		return cli.Usagef("usage: gateway hash-token TOKEN")
	}
	fmt.Println(gateway.HashToken(args[0]))
	return nil
}

// replyIdle maps the flag's 0 (never) to the config's negative.
func replyIdle(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
