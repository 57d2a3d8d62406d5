package executor

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/executor/txn"
	"github.com/atmostonce/toolexec/internal/tracing"
	"github.com/atmostonce/toolexec/kafkaretry"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/wire"
)

// Opening a member: the store, the transaction session, the topics and
// the routing check, then every part of the loop, each given only what it
// reads.

// New validates cfg, opens the store, ensures the topics and joins nothing
// yet: the group is joined when Run starts polling.
func New(ctx context.Context, cfg Config) (*Executor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	e := &Executor{cfg: cfg, m: newMetrics(cfg.Registerer), runDone: make(chan struct{})}
	e.changes.names = cfg.Names
	e.changes.hooks = cfg.Hooks
	if err := e.open(ctx); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

func (e *Executor) open(ctx context.Context) error {
	st, err := state.Open(filepath.Join(e.cfg.DataDir, "state"), state.Options{FS: e.cfg.StateFS})
	if err != nil {
		return err
	}
	e.store = st
	if n, err := eventlog.MigrateReadKeys(st); err != nil {
		return fmt.Errorf("executor: pending reads: %w", err)
	} else if n > 0 {
		e.cfg.Logger.Info("pending reads moved to keys that name their tenant and key", "reads", n)
	}
	// The dispatcher exists before the group session: a revoke callback
	// takes the revoked partitions' queued calls out of it.
	e.callCtx, e.cancelCall = context.WithCancel(context.Background())
	e.disp = newDispatcher(e.callCtx, e.cfg.Tools, e.cfg.MaxInFlight, e.cfg.Hooks, e.wake)
	e.tenants = newTenantLabels()
	e.disp.waited = e.queueWaited
	e.changes.cancel = e.disp.cancelPartitions
	sess, err := txn.New(e.txnConfig())
	if err != nil {
		return err
	}
	e.txns, e.client = sess, sess.Client()
	e.adm = kadm.NewClient(e.client)
	if e.layout, err = e.ensureTopics(ctx); err != nil {
		return err
	}
	if err := e.checkDurability(ctx); err != nil {
		return err
	}
	if err := e.checkRouting(ctx); err != nil {
		return err
	}
	e.dec = recordDecoder{names: e.cfg.Names, partitions: e.layout.Partitions}
	e.folds = &restorer{store: st, adm: e.adm, opts: eventlog.RestoreOptions{
		Seeds: e.cfg.Brokers, Topic: e.cfg.Names.Events, PartitionOf: e.dec.partitionOf, Progress: e.cfg.Turned,
		ClientOpts: append([]kgo.Opt{kgo.WithLogger(kgoLogger{l: e.cfg.Logger})}, e.cfg.Connect...),
	}}
	if e.courier, err = newCourier(st, e.cfg.Names.Control, e.layout.Partitions, e.cfg.Logger, e.m.Facts,
		append([]kgo.Opt{kgo.SeedBrokers(e.cfg.Brokers...), kgo.WithLogger(kgoLogger{l: e.cfg.Logger, level: e.cfg.KafkaLogLevel})}, e.cfg.Connect...)); err != nil {
		return err
	}
	e.replies = newReplyTopics(e.adm, e.cfg.Names, e.layout)
	e.enc = &encoder{names: e.cfg.Names, replies: e.replies, deadLetters: e.layout.DeadLetterPartitions, dlCount: e.m.DeadLetters, log: e.cfg.Logger}
	e.hot = newHotRecords(e.m.HotRecords)
	e.core = partition.New(e.coreConfig(), storeView{st: st, events: e.cfg.Names.Events, hot: e.hot}, time.Now())
	e.trace = newCallTracer(e.cfg.TracerProvider, e.cfg.Tools, e.cfg.Names.Results)
	e.disp.tracer = tracing.Tracer(e.cfg.TracerProvider, tracerName)
	return nil
}

func (e *Executor) coreConfig() partition.Config {
	return partition.Config{
		Partitions: e.layout.Partitions, MaxWaiters: e.cfg.MaxWaiters, Policy: toolPolicy(e.cfg.Tools), NearestTool: e.cfg.Tools.Nearest,
		SweepInterval: e.cfg.SweepInterval, SnapshotInterval: snapshotInterval(e.cfg.SnapshotInterval, e.layout.EventRetention),
		CheckSnapshot: checkSnapshot, Admission: admission(e.cfg.Tools, e.cfg.MaxInFlight+e.cfg.MaxQueued+e.cfg.MaxPollRecords), Logger: e.cfg.Logger,
	}
}

// txnConfig is the transaction session's configuration: the group
// session's options, the confirmation client's, and the bounds.
func (e *Executor) txnConfig() txn.Config {
	markers := append([]kgo.Opt{kgo.SeedBrokers(e.cfg.Brokers...), kgo.WithLogger(kgoLogger{l: e.cfg.Logger, level: e.cfg.KafkaLogLevel})},
		e.cfg.Connect...)
	return txn.Config{
		Session: e.clientOpts(), Markers: append(markers, e.cfg.ClientOpts...),
		Names: e.cfg.Names, Group: e.cfg.Group, TransactionalID: e.cfg.TransactionalID, TransactionTimeout: e.cfg.TransactionTimeout, BrokerOutage: e.cfg.BrokerOutage,
		Store: e.store, Owned: func() []int32 { return e.core.Owned() }, Logger: e.cfg.Logger,
		Metrics: txn.Metrics{TxnDuration: e.m.TxnDuration, ConfirmDuration: e.m.ConfirmDuration, AbortedAfterCommit: e.m.AbortedAfterCommit,
			AbortedBehindOffsets: e.m.AbortedBehindOffsets, CommittedAheadOfOffsets: e.m.CommittedAheadOfOffsets,
			HangingCommitted: e.m.HangingCommitted, HangingUnclosed: e.m.HangingUnclosed, HangingBlind: e.m.HangingBlind},
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
		kgo.OnPartitionsAssigned(e.changes.onAssigned),
		kgo.OnPartitionsRevoked(e.changes.onRevoked),
		kgo.OnPartitionsLost(e.changes.onLost),
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
	err := kafkaretry.Through(ctx, e.cfg.Logger, e.cfg.BrokerOutage, "topic check at start", nil, func() (err error) {
		layout, err = topicadmin.Ensure(ctx, e.adm, e.cfg.Names, e.cfg.Settings)
		return err
	})
	return layout, err
}

// toolPolicy is what the saga knows of a tool: its class's behaviour and
// its configured bounds.
func toolPolicy(reg *tools.Registry) func(tool string) (saga.Policy, bool) {
	return func(tool string) (saga.Policy, bool) {
		spec, _, ok := reg.Lookup(tool)
		if !ok {
			return saga.Policy{}, false
		}
		return saga.Policy{
			ReadOnly: spec.Class.ReadOnly(), PendingTTLMs: spec.PendingTTL.Milliseconds(),
			RetentionMs: spec.Retention.Milliseconds(), CompensateWith: spec.CompensateWith, MaxArgsBytes: spec.MaxArgsBytes,
			Resent:        spec.Class.Investigation() == tools.InvestigateRetry,
			ApprovalTTLMs: spec.ApprovalWindow().Milliseconds(), Approvers: spec.ApproversText(),
		}, true
	}
}

// snapshotInterval is how often snapshot rounds start
// (partition/snapshot.go): the configured interval, else a share of the
// event log's retention, at most maxSnapshotInterval.
func snapshotInterval(configured, retention time.Duration) time.Duration {
	if configured > 0 {
		return configured
	}
	if retention > 0 {
		return min(maxSnapshotInterval, retention/snapshotRetentionShare)
	}
	return maxSnapshotInterval
}

// checkRouting compares the topics found at start with the recorded
// routing count, and arms the guard with it.
func (e *Executor) checkRouting(ctx context.Context) error {
	opts := append(append([]kgo.Opt{kgo.SeedBrokers(e.cfg.Brokers...)}, e.cfg.Connect...), e.cfg.ClientOpts...)
	routing, err := topicadmin.RoutingPartitions(ctx, opts, e.cfg.Names, e.layout.Partitions)
	if err != nil {
		return err
	}
	g := &e.guard
	g.names, g.partitions, g.mismatch, g.log, g.pauser = e.cfg.Names, routing, e.m.LayoutMismatch, e.cfg.Logger, e.client
	if routing != e.layout.Partitions {
		g.layoutAtStart = fmt.Sprintf("%s has %d partitions but keys are routed by the %d recorded in %s: partitions were added",
			e.cfg.Names.Intents, e.layout.Partitions, routing, e.cfg.Names.Meta)
		g.refuseLayout(g.layoutAtStart)
	}
	e.layout.Partitions = routing
	return nil
}
