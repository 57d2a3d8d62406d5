package reconciler

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/internal/defaults"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topics"
)

// Config is the reconciler's configuration. Zero values take the defaults
// documented on each field, applied by Validate.
type Config struct {
	Brokers []string     // required
	Names   topics.Names // default topics.NamesWithPrefix("tool.")
	Group   string       // consumer group of the reconcilers; default "tool-reconciler"
	DataDir string       // required: the Pebble view lives in DataDir/view
	// Tools must be the executor's tool configuration: the reconciler
	// calls the same tools, with the same downstream keys.
	Tools *tools.Registry
	// By is recorded as the author of every command; default "reconciler".
	By string

	Policy Policy // defaults: 8 attempts, backoff 2s doubling to 5m, commands 1m

	ScanInterval   time.Duration // how often keys in doubt are examined; default 1s
	MaxConcurrent  int           // retries and probes running at once; default 16
	MaxScan        int           // keys in doubt examined per partition per scan, each scan after the last key the one before examined; default 100000
	MaxPollRecords int           // events folded per poll; default 5000
	SessionTimeout time.Duration // group session timeout; default 10s
	// FactGrace is how long after a subject's deadline, and after the end
	// of the last outage this member saw, it waits before escalating, so
	// that a member's fact (the call's outcome, or that it was never sent)
	// reaches the log first (grace.go); default 90s, over the recovery
	// bound of docs/DESIGN.md plus the members' delivery backoff.
	FactGrace time.Duration
	// AllowWeakDurability lets the reconciler start on a cluster of more
	// than one broker weaker than topicadmin.Production: logged, and
	// exported as toolexec_reconciler_durability_override. Default false.
	AllowWeakDurability bool

	Logger     *slog.Logger          // default slog.Default()
	Registerer prometheus.Registerer // default: none (metrics kept, not exported)
	Now        func() time.Time      // default time.Now; tests move time
	Hooks      Hooks                 // fault points for tests
	// Turned, when set, is called once per turn of the loop: a liveness
	// probe's evidence that the reconciler is not stuck
	// (httpserve.Liveness). It must not block.
	Turned func()
	// TracerProvider makes a span per retry or probe, linked to the call's
	// trace; nil: no spans.
	TracerProvider trace.TracerProvider
	ClientOpts     []kgo.Opt // extra kgo options (tests)
}

// ErrConfig is wrapped by every validation error.
var ErrConfig = errors.New("reconciler: invalid config")

// Validate applies the defaults and reports the first bad field by name.
func (c *Config) Validate() error {
	switch {
	case len(c.Brokers) == 0:
		return fmt.Errorf("%w: brokers: at least one seed broker is required", ErrConfig)
	case c.DataDir == "":
		return fmt.Errorf("%w: data_dir: required", ErrConfig)
	case c.Tools == nil:
		return fmt.Errorf("%w: tools: the executor's tool registry is required", ErrConfig)
	}
	c.defaults()
	switch {
	case c.Policy.MaxAttempts < 1:
		return fmt.Errorf("%w: policy.max_attempts: must be at least 1", ErrConfig)
	case c.Policy.BackoffCap < c.Policy.BackoffBase:
		return fmt.Errorf("%w: policy.backoff_cap (%s) is below backoff_base (%s)", ErrConfig, c.Policy.BackoffCap, c.Policy.BackoffBase)
	}
	return nil
}

func (c *Config) defaults() {
	if c.Names.Events == "" {
		c.Names = topics.NamesWithPrefix(topics.DefaultPrefix)
	}
	defaults.Set(&c.Group, "tool-reconciler")
	defaults.Set(&c.By, "reconciler")
	defaults.Set(&c.Policy.MaxAttempts, 8)
	defaults.Set(&c.Policy.BackoffBase, 2*time.Second)
	defaults.Set(&c.Policy.BackoffCap, 5*time.Minute)
	defaults.Set(&c.Policy.CommandTimeout, time.Minute)
	defaults.Set(&c.ScanInterval, time.Second)
	defaults.Set(&c.MaxConcurrent, 16)
	defaults.Set(&c.MaxScan, 100_000)
	defaults.Set(&c.MaxPollRecords, 5000)
	defaults.Set(&c.SessionTimeout, 10*time.Second)
	defaults.Set(&c.FactGrace, 90*time.Second)
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}
