package executor

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/internal/defaults"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// Config is the executor's configuration. Zero values take the documented
// defaults in Validate.
type Config struct {
	Brokers []string     // required
	Names   topics.Names // default: topics.NamesWithPrefix("tool.")
	Group   string       // default "tool-executor"
	DataDir string       // required: the Pebble view lives in DataDir/state
	Tools   *tools.Registry

	// Bounds.
	MaxInFlight int // calls running at once across tools; default 256
	// MaxQueued bounds the started calls waiting for a slot, over all tools
	// and tenants. The calls this member holds at once are MaxInFlight +
	// MaxQueued + MaxPollRecords (one tick may start a call per record it
	// polled): past them, or past a tenant's share of them, a call is
	// refused at once (partition/admission.go); default 8*MaxInFlight, so
	// that a tenant alone (four fifths of them) keeps 2,000 intents
	// outstanding, what a member held when it paused its poll at
	// 4*MaxInFlight waiting plus a poll.
	MaxQueued      int
	MaxPollRecords int // records decided per tick; default DefaultMaxPollRecords
	MaxWaiters     int // intents waiting on one key; default 64

	DrainTimeout       time.Duration // calls in flight get this long on revocation and shutdown; default 10s
	SessionTimeout     time.Duration // group session timeout; default 10s
	RebalanceTimeout   time.Duration // default 30s; must exceed DrainTimeout
	TransactionTimeout time.Duration // default 20s
	// TransactionalID is unique per process. A stable value per instance
	// (a StatefulSet ordinal, say) lets a restarted instance fence its
	// previous incarnation at once instead of waiting out its open
	// transaction. Default: Group + "-" + random.
	TransactionalID string
	SweepInterval   time.Duration // how often expired keys are swept; default 30s
	// SnapshotInterval is how often every record is restated in the event
	// log, so that no record depends on events older than the log's
	// retention (snapshot.go). Default: a quarter of the event log's
	// retention, at most 24h.
	SnapshotInterval time.Duration
	// BrokerOutage is how long a failed transaction keeps being aborted
	// while the broker cannot be reached (a restart, a partition) before
	// Run gives up with ErrFatal (Outage reports it: the process may start
	// a new executor); default 2m.
	BrokerOutage time.Duration
	// Turned, when set, is called once per turn of the loop and once per
	// fetch of a restore: a liveness probe's evidence that the member is
	// not stuck (httpserve.Liveness). It must not block. Called from the
	// loop and the restores' goroutines at once.
	Turned func()

	Settings topicadmin.Settings // topic creation; MinEventRetention defaults from the tools
	// StateFS is the file system of the Pebble view; default the OS's.
	// Tests inject disk faults with it (Pebble's vfs/errorfs).
	StateFS vfs.FS
	// AllowWeakDurability lets the member start on a cluster of more than
	// one broker whose settings are weaker than topicadmin.Production
	// (replication factor 3, min ISR 2, no unclean election): logged, and
	// exported as toolexec_executor_durability_override. Default false:
	// such a cluster is refused at start.
	AllowWeakDurability bool

	Logger        *slog.Logger          // default slog.Default()
	KafkaLogLevel kgo.LogLevel          // franz-go's own log level; default warn
	Registerer    prometheus.Registerer // default: none (metrics are kept but not exported)
	Now           func() time.Time      // default time.Now; tests move time
	Hooks         Hooks                 // fault points for tests and the chaos harness
	// TracerProvider makes the spans of calls (executor/trace.go); nil: no
	// spans, and nothing is spent on them (internal/tracing.FromEnv decides
	// from OTEL_*).
	TracerProvider trace.TracerProvider
	// Connect are the options every Kafka client of the executor takes,
	// the group session's and each restore's: TLS and SASL
	// (kafkaconfig.Config.Opts). Default: plaintext.
	Connect    []kgo.Opt
	ClientOpts []kgo.Opt // extra kgo options of the group session (tests)
}

// ErrConfig is wrapped by every validation error.
var ErrConfig = errors.New("executor: invalid config")

// Validate applies defaults and reports the first bad field by name.
func (c *Config) Validate() error {
	if len(c.Brokers) == 0 {
		return fmt.Errorf("%w: brokers: at least one seed broker is required", ErrConfig)
	}
	if c.DataDir == "" {
		return fmt.Errorf("%w: data_dir: required", ErrConfig)
	}
	if c.Tools == nil {
		return fmt.Errorf("%w: tools: a registry is required", ErrConfig)
	}
	c.defaults()
	if c.MaxWaiters > wire.MaxWaitersLimit {
		return fmt.Errorf("%w: max_waiters (%d) is over %d: a key's record, with its waiters, must fit one snapshot event", ErrConfig, c.MaxWaiters, wire.MaxWaitersLimit)
	}
	if c.RebalanceTimeout <= c.DrainTimeout {
		return fmt.Errorf("%w: rebalance_timeout (%s) must exceed drain_timeout (%s): the drain commits outcomes while the group waits for this member", ErrConfig, c.RebalanceTimeout, c.DrainTimeout)
	}
	return nil
}

// DefaultMaxPollRecords is Config.MaxPollRecords' default.
const DefaultMaxPollRecords = 1000

func (c *Config) defaults() {
	if c.Names.Intents == "" {
		c.Names = topics.NamesWithPrefix(topics.DefaultPrefix)
	}
	defaults.Set(&c.Group, "tool-executor")
	defaults.Set(&c.MaxInFlight, 256)
	defaults.Set(&c.MaxQueued, 8*c.MaxInFlight)
	defaults.Set(&c.MaxPollRecords, DefaultMaxPollRecords)
	defaults.Set(&c.MaxWaiters, 64)
	defaults.Set(&c.DrainTimeout, 10*time.Second)
	defaults.Set(&c.SessionTimeout, 10*time.Second)
	defaults.Set(&c.RebalanceTimeout, 30*time.Second)
	defaults.Set(&c.TransactionTimeout, 20*time.Second)
	defaults.Set(&c.SweepInterval, 30*time.Second)
	defaults.Set(&c.BrokerOutage, 2*time.Minute)
	defaults.Set(&c.TransactionalID, c.Group+"-"+randomSuffix())
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Settings.MinEventRetention == 0 {
		c.Settings.MinEventRetention = c.minEventRetention()
	}
}

func (c *Config) minEventRetention() time.Duration {
	var d time.Duration
	for _, s := range c.Tools.Specs() {
		d = max(d, s.Retention+s.PendingTTL)
	}
	return d
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
