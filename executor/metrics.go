package executor

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/topicadmin"
)

// Metrics are the executor's Prometheus collectors. They are registered on
// the Registerer given in Config (never the global registry).
type Metrics struct {
	Intents      *prometheus.CounterVec   // by decision
	Calls        *prometheus.CounterVec   // by tool and outcome
	CallDuration *prometheus.HistogramVec // by tool
	TickDuration prometheus.Histogram
	TxnDuration  prometheus.Histogram
	// ConfirmDuration is how long a tick with calls waited, after EndTxn,
	// to see its commit markers on the events partitions (txn/confirm.go).
	ConfirmDuration prometheus.Histogram
	// AbortedAfterCommit counts ticks whose EndTxn reported a commit and
	// whose started events an events partition then showed aborted
	// (txn/confirm.go): what the commit confirmation exists for. Each one is
	// logged with the producer and the offsets, for kafka-dump-log.
	AbortedAfterCommit prometheus.Counter
	// AbortedBehindOffsets counts transactions whose end failed, whose
	// offsets the group showed committed and whose own records a marker
	// showed aborted (txn/offsets.go): their inputs were decided again.
	AbortedBehindOffsets prometheus.Counter
	// CommittedAheadOfOffsets counts the mirror: an end that failed, the
	// group's offsets not moved past its inputs, its records committed
	// (txn/offsets.go): the member acted on the commit.
	CommittedAheadOfOffsets prometheus.Counter
	Txns                    *prometheus.CounterVec // by result
	TickRecords             prometheus.Histogram   // records decided per committed transaction
	InFlight                prometheus.Gauge
	KeysInDoubt             *prometheus.GaugeVec // by partition
	Restores                prometheus.Histogram
	RestoreEvents           prometheus.Counter
	DeadLetters             *prometheus.CounterVec // by reason
	OutcomesLost            prometheus.Counter
	ReadsResumed            prometheus.Counter
	HangingCommitted        prometheus.Counter
	// HangingUnclosed counts hanging transactions found and not closed,
	// by reason: not_authorized (the member lacks ClusterAction) or error.
	HangingUnclosed *prometheus.CounterVec
	// HangingBlind is the number of partitions the last hanging check
	// could not describe (DescribeProducers refused: Read missing).
	HangingBlind   prometheus.Gauge
	Fsyncs         prometheus.Counter
	Unproducible   prometheus.Counter
	LayoutMismatch prometheus.Gauge
	RestoreGaps    prometheus.Gauge
	SnapshotRounds prometheus.Counter
	SnapshotEvents prometheus.Counter
	// HotRecords counts the view's record lookups by where they were
	// answered: hit (the records materialised last, in memory) or miss
	// (Pebble).
	HotRecords *prometheus.CounterVec
	// TenantAdmitted, TenantRefused and TenantQueueWait are the admission
	// per tenant (admission.go): calls started, intents refused for want
	// of a place by limit, and the wait of started calls for a slot.
	TenantAdmitted  *prometheus.CounterVec
	TenantRefused   *prometheus.CounterVec
	TenantQueueWait *prometheus.HistogramVec
	// Durability is what the durability check at start and its watch
	// found (durability.go).
	Durability *topicadmin.DurabilityGauges
	// Facts are the member's facts kept and delivered (courier.go).
	Facts *FactMetrics
}

func newMetrics(reg prometheus.Registerer) *Metrics {
	const ns, sub = "toolexec", "executor"
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: ns, Subsystem: sub, Name: name, Help: help}
	}
	hist := func(name, help string, buckets []float64) prometheus.HistogramOpts {
		return prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: name, Help: help, Buckets: buckets}
	}
	lat := prometheus.ExponentialBuckets(0.0005, 2, 16)
	m := &Metrics{
		Intents:         prometheus.NewCounterVec(prometheus.CounterOpts(opts("intents_total", "Intents and commands decided, by decision.")), []string{"decision"}),
		Calls:           prometheus.NewCounterVec(prometheus.CounterOpts(opts("calls_total", "Tool calls finished, by tool and outcome.")), []string{"tool", "outcome"}),
		CallDuration:    prometheus.NewHistogramVec(hist("call_duration_seconds", "Tool call duration.", lat), []string{"tool"}),
		TickDuration:    prometheus.NewHistogram(hist("tick_duration_seconds", "Loop tick duration, decide to Pebble sync.", lat)),
		TxnDuration:     prometheus.NewHistogram(hist("txn_duration_seconds", "Kafka transaction end duration.", lat)),
		ConfirmDuration: prometheus.NewHistogram(hist("commit_confirm_duration_seconds", "Wait after a reported commit until its markers show on the events partitions of the tick's calls.", lat)),
		AbortedAfterCommit: prometheus.NewCounter(prometheus.CounterOpts(opts("commits_aborted_after_success_total",
			"Transactions EndTxn reported committed whose started events an events partition then showed aborted; their calls were not made (docs/RELIABILITY.md)."))),
		AbortedBehindOffsets: prometheus.NewCounter(prometheus.CounterOpts(opts("aborted_behind_committed_offsets_total",
			"Transactions whose end failed, whose inputs the group's offsets showed committed (by this transaction, or by a new owner of the partition), and whose records a marker showed aborted; their inputs were decided again (docs/RELIABILITY.md, finding 18)."))),
		CommittedAheadOfOffsets: prometheus.NewCounter(prometheus.CounterOpts(opts("committed_ahead_of_offsets_total",
			"Transactions whose end failed, whose inputs the group's offsets showed not committed, and whose records the markers showed committed; the member acted on the commit and committed the offsets past its inputs (docs/RELIABILITY.md)."))),
		Txns:             prometheus.NewCounterVec(prometheus.CounterOpts(opts("transactions_total", "Transactions by result.")), []string{"result"}),
		TickRecords:      prometheus.NewHistogram(hist("transaction_inputs", "Inputs and completions per committed transaction (group commit).", prometheus.ExponentialBuckets(1, 2, 14))),
		InFlight:         prometheus.NewGauge(prometheus.GaugeOpts(opts("calls_in_flight", "Calls started and not yet recorded."))),
		KeysInDoubt:      prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("keys_in_doubt", "Keys started or unknown with no call running here, by partition.")), []string{"partition"}),
		Restores:         prometheus.NewHistogram(hist("restore_duration_seconds", "Partition restore duration.", prometheus.ExponentialBuckets(0.001, 2, 18))),
		RestoreEvents:    prometheus.NewCounter(prometheus.CounterOpts(opts("restore_events_total", "Events folded by restores."))),
		DeadLetters:      prometheus.NewCounterVec(prometheus.CounterOpts(opts("deadletters_total", "Inputs dead-lettered, by reason.")), []string{"reason"}),
		OutcomesLost:     prometheus.NewCounter(prometheus.CounterOpts(opts("outcomes_unrecorded_total", "Calls whose outcome could not be recorded because the partition moved; their keys are in doubt."))),
		HangingCommitted: prometheus.NewCounter(prometheus.CounterOpts(opts("hanging_transactions_committed_total", "Transactions left open on a partition of the executor's topics, unknown to their coordinator, that it closed: with an abort marker for one known aborted (its writer's record, or its coordinator's last state), else a commit marker."))),
		HangingUnclosed:  prometheus.NewCounterVec(prometheus.CounterOpts(opts("hanging_transactions_unclosed_total", "Hanging transactions found that this member could not close, by reason (not_authorized: it lacks ClusterAction; see docs/SECURITY.md). Each stalls its partition until closed.")), []string{"reason"}),
		HangingBlind:     prometheus.NewGauge(prometheus.GaugeOpts(opts("hanging_check_unreadable_partitions", "Partitions the last hanging-transaction check could not describe (DescribeProducers refused, e.g. no Read on __consumer_offsets)."))),
		ReadsResumed:     prometheus.NewCounter(prometheus.CounterOpts(opts("reads_resumed_total", "Read-only calls called again by a new owner because their previous owner left them unanswered."))),
		Fsyncs:           prometheus.NewCounter(prometheus.CounterOpts(opts("state_syncs_total", "Synced Pebble batches."))),
		Unproducible:     prometheus.NewCounter(prometheus.CounterOpts(opts("unproducible_records_total", "Records that could not be produced (too large, refused by the broker); their inputs are answered on their own when polled again."))),
		LayoutMismatch:   prometheus.NewGauge(prometheus.GaugeOpts(opts("layout_mismatch", "1 when the topics' partition counts or the group's assignment no longer match the recorded routing count: the member decides nothing until an operator acts."))),
		RestoreGaps:      prometheus.NewGauge(prometheus.GaugeOpts(opts("restore_gaps", "Owned partitions not decided because their event log lost events the view needs and no complete snapshot round covers them."))),
		SnapshotRounds:   prometheus.NewCounter(prometheus.CounterOpts(opts("snapshot_rounds_total", "Snapshot rounds completed (every record restated, a round event per partition)."))),
		SnapshotEvents:   prometheus.NewCounter(prometheus.CounterOpts(opts("snapshot_events_total", "Records restated by snapshot rounds."))),
		TenantAdmitted: prometheus.NewCounterVec(prometheus.CounterOpts(opts("tenant_admitted_total",
			fmt.Sprintf("Calls, reads and compensations started, by tenant (the first %d tenants seen; the rest as %s).", maxTenantLabels, otherTenants))), []string{"tenant"}),
		TenantRefused: prometheus.NewCounterVec(prometheus.CounterOpts(opts("tenant_refused_total",
			"Intents answered not_executed at once for want of a place, by tenant and limit (tool_share, member_share: the tenant held its share; tool_full, member_full: no place was free).")), []string{"tenant", "limit"}),
		TenantQueueWait: prometheus.NewHistogramVec(hist("tenant_queue_wait_seconds",
			"How long started calls waited in their tool's queue for a slot, by tenant.", lat), []string{"tenant"}),
		HotRecords: prometheus.NewCounterVec(prometheus.CounterOpts(opts("hot_record_lookups_total", "Record lookups of the decisions, by result: hit (a record materialised lately, held in memory) or miss (read from Pebble).")), []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.Intents, m.Calls, m.CallDuration, m.TickDuration, m.TxnDuration, m.ConfirmDuration, m.AbortedAfterCommit, m.AbortedBehindOffsets, m.CommittedAheadOfOffsets, m.Txns, m.TickRecords,
			m.InFlight, m.KeysInDoubt, m.Restores, m.RestoreEvents, m.DeadLetters, m.OutcomesLost, m.ReadsResumed, m.HangingCommitted, m.HangingUnclosed, m.HangingBlind, m.Fsyncs, m.Unproducible,
			m.LayoutMismatch, m.RestoreGaps, m.SnapshotRounds, m.SnapshotEvents, m.HotRecords, m.TenantAdmitted, m.TenantRefused, m.TenantQueueWait)
	}
	m.Durability = topicadmin.NewDurabilityGauges(reg, sub)
	m.Facts = newFactMetrics(reg)
	return m
}

func partitionLabel(p int32) string { return strconv.Itoa(int(p)) }
