package executor

import (
	"github.com/atmostonce/toolexec/internal/tracing"

	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/wire"
)

// Executor is one member of the executor group. Run it once; it is not
// safe to call Run concurrently.
type Executor struct {
	cfg     Config
	m       *Metrics
	sess    *kgo.GroupTransactSession
	adm     *kadm.Client
	store   *state.Store
	layout  topicadmin.Layout
	disp    *dispatcher
	replies *replyTopics
	trace   *callTracer // nil: tracing off

	callCtx    context.Context // parent of calls: outlives Run's ctx for the drain
	cancelCall context.CancelFunc

	// Loop-owned: touched only by the loop goroutine.
	core *partition.Core // every per-partition rule and what it remembers
	hot  *hotRecords     // the records materialised last, read before Pebble (hotrecords.go)
	// offsetsUnsure: a transaction end failed, so it may have committed
	// although the session rewound to the offsets before it (txn.go).
	offsetsUnsure  bool
	loggedPID      int64        // the producer id last named in the log (pidChanged)
	lastStallCheck time.Time    // hanging.go
	aborted        *abortedTxns // transactions this member treated as aborted (owntxns.go)

	layoutRefused    atomic.Bool  // the topics' partitions or the assignment do not match the routing (layout.go)
	layoutAtStart    string       // why the topics found at start were refused; "" when they were not
	pauser           fetchPauser  // the session's client (layout.go)
	gapCount         atomic.Int32 // partitions with a gap in their log, for Ready (restore.go)
	rebalancePending atomic.Bool
	dirty            atomic.Bool // a group callback ran: reset the session before the next transaction
	changes          ownershipChanges
	crashed          atomic.Bool
	runDone          chan struct{}
	ready            atomic.Bool
	assigned         bool        // an assignment was applied (loop goroutine)
	warm             atomic.Bool // the partitions of an assignment were all restored (noteWarm)
	wakeMu           sync.Mutex
	wakeFn           context.CancelFunc
	endMu            sync.Mutex
	endCancel        context.CancelFunc // cancels a transaction end that waits on a blocked group callback
	eventsID         [16]byte           // the events topic's id, for the commit confirmation's fetches
	markers          *kgo.Client        // the commit confirmation's own connections (confirm.go)
}

// ErrFatal wraps errors after which the executor must stop.
var ErrFatal = errors.New("executor: fatal")

// New validates cfg, opens the store, ensures the topics and joins nothing
// yet: the group is joined when Run starts polling.
func New(ctx context.Context, cfg Config) (*Executor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Executor{cfg: cfg, m: newMetrics(cfg.Registerer), runDone: make(chan struct{}), loggedPID: -1}
	if err := e.open(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Executor) open(ctx context.Context) error {
	st, err := state.Open(filepath.Join(e.cfg.DataDir, "state"), state.Options{})
	if err != nil {
		return err
	}
	e.store = st
	if n, err := eventlog.MigrateReadKeys(st); err != nil {
		return fmt.Errorf("executor: pending reads: %w", err)
	} else if n > 0 {
		e.cfg.Logger.Info("pending reads moved to keys that name their tenant and key", "reads", n)
	}
	if e.aborted, err = loadAbortedTxns(st, time.Now()); err != nil {
		return err
	}
	sess, err := kgo.NewGroupTransactSession(e.clientOpts()...)
	if err != nil {
		return fmt.Errorf("executor: client: %w", err)
	}
	e.sess = sess
	e.pauser = sess.Client()
	e.adm = kadm.NewClient(sess.Client())
	if e.markers, err = e.markerClient(); err != nil {
		return err
	}
	if e.layout, err = e.ensureTopics(ctx); err != nil {
		return err
	}
	if err := e.checkRouting(ctx); err != nil {
		return err
	}
	e.replies = newReplyTopics(e.adm, e.cfg.Names, e.layout)
	e.hot = newHotRecords(e.m.HotRecords)
	e.core = partition.New(e.coreConfig(), storeView{st: st, events: e.cfg.Names.Events, hot: e.hot}, time.Now())
	e.callCtx, e.cancelCall = context.WithCancel(context.Background())
	e.trace = newCallTracer(e.cfg.TracerProvider, e.cfg.Tools, e.cfg.Names.Results)
	e.disp = newDispatcher(e.callCtx, e.cfg.Tools, e.cfg.MaxInFlight, e.cfg.Hooks, e.wake)
	e.disp.tracer = tracing.Tracer(e.cfg.TracerProvider, tracerName)
	return nil
}

func (e *Executor) coreConfig() partition.Config {
	return partition.Config{
		Partitions: e.layout.Partitions, MaxWaiters: e.cfg.MaxWaiters, Policy: e.policy,
		SweepInterval: e.cfg.SweepInterval, SnapshotInterval: e.snapshotInterval(),
		CheckSnapshot: e.checkSnapshot, Logger: e.cfg.Logger,
	}
}

func (e *Executor) clientOpts() []kgo.Opt {
	n := e.cfg.Names
	opts := []kgo.Opt{
		kgo.SeedBrokers(e.cfg.Brokers...),
		kgo.ConsumerGroup(e.cfg.Group),
		kgo.ConsumeTopics(n.Intents, n.Control),
		kgo.TransactionalID(e.cfg.TransactionalID),
		kgo.TransactionTimeout(e.cfg.TransactionTimeout),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		// Range assigns partition p of every subscribed topic to the same
		// member when the topics have equal partition counts: intents p and
		// control p stay together, which per-key order needs.
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsCallbackBlocked(e.onCallbackBlocked),
		kgo.OnPartitionsAssigned(e.onAssigned),
		kgo.OnPartitionsRevoked(e.onRevoked),
		kgo.OnPartitionsLost(e.onLost),
		kgo.SessionTimeout(e.cfg.SessionTimeout),
		// A third of the session timeout at most, as Kafka advises; kgo's
		// default of 3 s would expire a short session between beats.
		kgo.HeartbeatInterval(min(maxHeartbeatInterval, e.cfg.SessionTimeout/4)),
		kgo.RebalanceTimeout(e.cfg.RebalanceTimeout),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		// Every record names its partition: routing is ours, not the
		// client's, so that it cannot drift from wire.Partition.
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchMaxBytes(wire.MaxMessageBytes + producerBatchOverhead),
		kgo.WithLogger(kgoLogger{l: e.cfg.Logger, level: e.cfg.KafkaLogLevel}),
	}
	opts = append(opts, e.cfg.Connect...)
	return append(opts, e.cfg.ClientOpts...)
}

// ensureTopics creates or checks the topics, waiting out a broker that
// cannot be reached yet (up to BrokerOutage or ctx): an executor started
// while its broker restarts should come up with it, not crash-loop.
func (e *Executor) ensureTopics(ctx context.Context) (topicadmin.Layout, error) {
	var layout topicadmin.Layout
	err := e.throughOutage(ctx, "topic check at start", func() (err error) {
		layout, err = topicadmin.Ensure(ctx, e.adm, e.cfg.Names, e.cfg.Settings)
		return err
	})
	return layout, err
}

// Ready reports whether the loop runs and decides: false before Run,
// after it, until the partitions of the member's first assignment are
// restored (noteWarm), and while the member refuses to decide because the
// topics' partitions changed (layout.go) or a partition's log has a gap
// (restore.go).
func (e *Executor) Ready() bool {
	return e.ready.Load() && e.warm.Load() && !e.layoutRefused.Load() && e.gapCount.Load() == 0
}

// Store exposes the view, read-only by convention (history, tests).
func (e *Executor) Store() *state.Store { return e.store }

// Layout is the topic layout found at start.
func (e *Executor) Layout() topicadmin.Layout { return e.layout }

// Metrics returns the executor's collectors.
func (e *Executor) Metrics() *Metrics { return e.m }

// Close releases the client and the store. Call it after Run returned.
func (e *Executor) Close() {
	if e.cancelCall != nil {
		e.cancelCall()
	}
	if e.sess != nil {
		e.sess.Close()
	}
	if e.markers != nil {
		e.markers.Close()
	}
	if e.store != nil {
		_ = e.store.Close()
	}
}

// Crash abandons the executor as a kill -9 would, for tests: the client is
// closed under the loop, nothing is drained or recorded, and calls still
// running finish into nothing. It waits for Run to return.
func (e *Executor) Crash() {
	e.crashed.Store(true)
	e.cancelCall()
	e.sess.Client().Close()
	e.markers.Close()
	<-e.runDone
}

// policy is what the saga knows of a tool: its class's behaviour and its
// configured bounds.
func (e *Executor) policy(tool string) (saga.Policy, bool) {
	spec, _, ok := e.cfg.Tools.Lookup(tool)
	if !ok {
		return saga.Policy{}, false
	}
	return saga.Policy{
		ReadOnly: spec.Class.ReadOnly(), PendingTTLMs: spec.PendingTTL.Milliseconds(),
		RetentionMs: spec.Retention.Milliseconds(), CompensateWith: spec.CompensateWith, MaxArgsBytes: spec.MaxArgsBytes,
		Resent: spec.Class.Investigation() == tools.InvestigateRetry,
	}, true
}

// snapshotInterval is how often snapshot rounds start (partition/snapshot.go).
func (e *Executor) snapshotInterval() time.Duration {
	if e.cfg.SnapshotInterval > 0 {
		return e.cfg.SnapshotInterval
	}
	if r := e.layout.EventRetention; r > 0 {
		return min(maxSnapshotInterval, r/snapshotRetentionShare)
	}
	return maxSnapshotInterval
}

// partitionOf is the owner partition of (tenant, key).
func (e *Executor) partitionOf(tenant, key string) int32 {
	return wire.Partition(wire.RoutingKey(tenant, key), e.layout.Partitions)
}
