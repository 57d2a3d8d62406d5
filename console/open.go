package console

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/cli"
	"github.com/atmostonce/toolexec/internal/tokenfile"
)

// Options are what a process gives the console: its flags, the backend,
// and the registry of its metrics.
type Options struct {
	OperatorsFile string // --operators; empty: Operators, else the console is off
	// Operators are the operators in force when OperatorsFile is empty
	// (SingleOperator); nil with no file: the console is off.
	Operators   *OperatorStore
	ExternalURL string // --console-url
	// KafkaConfigFile (--console-kafka-config) is the Kafka client file the
	// console's own clients take (the key pages' reads of the event log,
	// the actions and the wait for their answers on the results topic):
	// the operator role's on a secured cluster, where the reconciler's may
	// not read the results. Empty: the process's own (Backend's).
	KafkaConfigFile string
	Backend         Backend
	Registerer      prometheus.Registerer // the process's; nil: no info or reload metric
	Logger          *slog.Logger
	// Disjoint keeps the operators apart from the other token files of
	// the process (the embedded gateway's tenants), at the start and at
	// every reload; nil: no other file.
	Disjoint *tokenfile.Disjoint
}

// Open loads the operators file (when one is named), reloads it on SIGHUP
// until stop is called, and publishes toolexec_console_info{url} so that
// alert annotations can link to the console (deploy/prometheus).
func Open(ctx context.Context, o Options) (c *Console, stop func(), err error) {
	stop = func() {}
	if err := o.kafka(ctx); err != nil {
		return nil, nil, err
	}
	ops := o.Operators
	if o.OperatorsFile != "" {
		if ops, err = NewOperatorStore(o.OperatorsFile); err != nil {
			return nil, nil, err
		}
		if o.Registerer != nil {
			ops.CountReloads(o.Registerer)
		}
	}
	if ops != nil {
		if err := ops.KeepApart(o.Disjoint); err != nil {
			return nil, nil, err
		}
	}
	if o.OperatorsFile != "" {
		stop = ops.ReloadOnSignal(o.Logger, syscall.SIGHUP)
	}
	c, err = New(Config{Operators: ops, Backend: o.Backend, ExternalURL: o.ExternalURL, Logger: o.Logger})
	if err != nil {
		stop()
		return nil, nil, err
	}
	if o.Registerer != nil && c.On() {
		info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "toolexec_console_info", ConstLabels: prometheus.Labels{"url": o.ExternalURL},
			Help: "The operator console is served; url is its --console-url (empty when not set), which alert annotations link to."})
		info.Set(1)
		o.Registerer.MustRegister(info)
	}
	return c, stop, nil
}

// kafka gives the backend the clients of --console-kafka-config.
func (o *Options) kafka(ctx context.Context) error {
	rb, ok := o.Backend.(*ReconcilerBackend)
	if o.KafkaConfigFile == "" || !ok {
		return nil
	}
	conn, err := cli.Connect(ctx, strings.Join(rb.Brokers, ","), o.KafkaConfigFile, "", o.Logger)
	if err != nil {
		return fmt.Errorf("--console-kafka-config: %w", err)
	}
	rb.Brokers, rb.ClientOpts = conn.Seeds, conn.Opts
	return nil
}

// OffHint is what a process prints when it serves no console.
const OffHint = "operator console: off (no --operators file); to turn it on see docs/OPERATIONS.md, \"Operator console\""
