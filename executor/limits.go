package executor

import (
	"time"

	"github.com/atmostonce/toolexec/wire"
)

// Every literal bound and timeout of the loop, with the reason for its
// value. Configurable ones are in Config (with their defaults there);
// the partition core's own are in partition/limits.go, the transaction
// session's in txn/limits.go.

const (
	// PollWait bounds how long one poll waits for records; a finished
	// call wakes the poll earlier, so outcomes are not held back by idle
	// input. Exported for the bench's baseline, which polls alike.
	PollWait = 200 * time.Millisecond
	// retryTickPause is the wait after a tick that could not be built (a
	// restore that did not settle, a gap): long enough not to spin on
	// the broker, short enough that the partition's records wait little.
	retryTickPause = time.Second

	// durabilityWatchInterval is how often the durability gauges (ISR
	// under min ISR per topic, replication) are read again: a partition
	// below its min ISR stops the member's transactions, and an alert
	// pending for a minute should see a few readings.
	durabilityWatchInterval = 15 * time.Second

	// maxHeartbeatInterval caps the heartbeat at kgo's default; shorter
	// sessions get a quarter of theirs (Kafka advises at most a third).
	maxHeartbeatInterval = 3 * time.Second
	// producerBatchOverhead is what a batch adds to its largest record:
	// the batch limit is the record limit plus this, so one record of
	// maxRecordBytes always fits a batch of its own.
	producerBatchOverhead = 64 << 10

	// maxRecordBytes bounds a record the executor produces, key, value
	// and headers together: under a topic's default max.message.bytes
	// (1 MiB + 12 bytes) less the batch and record overhead, so a record
	// that passes is never refused for its size by a broker with default
	// settings.
	maxRecordBytes = wire.MaxMessageBytes - 1<<10
	// maxAnswerKeyBytes bounds an answer's Kafka key: a routing key is at
	// most a 64-byte tenant, "/" and a 256-byte key.
	maxAnswerKeyBytes = 64 + 1 + wire.MaxKeyBytes

	// restoreSettleMargin is added to the transaction timeout for the
	// wait of a required restore on the transactions open on its events
	// partition: the previous owner's last transaction ends within its
	// timeout, and its markers need a moment more.
	restoreSettleMargin = 10 * time.Second
	// backgroundSettle bounds the same wait for a restore the tick does
	// not need (an idle partition, a gap retry): it never holds a tick
	// up for longer; an unsettled one is tried again later.
	backgroundSettle = time.Second

	// maxHeldPolls bounds the polls the loop makes while it holds the
	// rebalance gate (gate.go): each adds one to franz-go's count of
	// pollers, a 32-bit field whose overflow would block polls and
	// rebalances for good. A quarter of it is weeks of polls at a
	// thousand a second; a member that gets there stops polling until
	// its calls are done, then opens the gate.
	maxHeldPolls = 1 << 30

	// drainPoll is how often a drain re-checks for calls that finished: a
	// call's slot is released just after its completion is sent.
	drainPoll = 50 * time.Millisecond

	// replyLookupTimeout bounds one ListTopics for reply_to topics. Names
	// of one tick are looked up in one request, before the decisions.
	replyLookupTimeout = 5 * time.Second
	// maxReplyTopics bounds the reply_to topics remembered (existing or
	// missing): agents choose the names. Past it the least recently used
	// is forgotten (looked up again when used), never a new name refused.
	maxReplyTopics = 1024
	// replyMissingTTL is how long a reply_to topic found missing is not
	// looked up again: an agent creating its topic late is answered there
	// within this.
	replyMissingTTL = 10 * time.Second

	// courierBatch bounds the facts produced in one request; facts are
	// rare (a moved partition, an unknown transaction end), a mass outage
	// leaves at most one per call in flight.
	courierBatch = 64
	// courierProduceTimeout bounds one delivery; a broker away fails it,
	// and the courier tries again after its backoff.
	courierProduceTimeout = 10 * time.Second
	// courierBackoffMin and courierBackoffMax: the wait between deliveries
	// that failed, doubling. The maximum is part of the recovery bound
	// (docs/DESIGN.md, "Recovery after a quorum loss"): a fact reaches the
	// control topic at most this long after the broker can take it.
	courierBackoffMin = 500 * time.Millisecond
	courierBackoffMax = 5 * time.Second
	// courierLastPass bounds the delivery a member tries at shutdown,
	// after its drain (which may have kept facts).
	courierLastPass = 5 * time.Second

	// toolQueueRounds: a tool's calls in one member wait at most this many
	// times its max_in_flight (partition/admission.go), so that a call
	// waits about as many of the tool's call times before it starts (and
	// one that would outwait its pending_ttl is not sent: tools.HTTP). 64:
	// a tenant alone keeps 2,000 intents outstanding on a tool of the
	// default max_in_flight (four fifths of 65 × 64), as it did when the
	// member paused its poll instead; a smaller queue refused the bench's
	// saturated closed loop of one tenant.
	toolQueueRounds = 64
	// maxTenantLabels bounds the tenants named in the metrics' labels;
	// later tenants share one label (admission.go).
	maxTenantLabels = 256

	// maxSnapshotInterval: rounds come at least daily, whatever the
	// retention, so that a DeleteRecords or a retention lowered by an
	// operator leaves at most a day to a complete round.
	maxSnapshotInterval = 24 * time.Hour
	// snapshotRetentionShare: with an interval of a quarter of the
	// retention, a complete round stays in the log even when one round is
	// slow or a member restarted in the middle of one.
	snapshotRetentionShare = 4
)
