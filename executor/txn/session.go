package txn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/topics"
)

// ErrFatal wraps every error the session returns: after one the member
// must stop (its producer is unusable, or it cannot tell what the group
// committed). Package executor exports the same value as its own
// ErrFatal, so that errors.Is finds either.
var ErrFatal = errors.New("executor: fatal")

// Config is what a Session needs. Every field is required but Metrics'
// collectors, which may be left nil only in tests that do not read them
// (New gives them unregistered ones).
type Config struct {
	// Session are the options of the group transact session: seeds, the
	// consumer group and its callbacks, the transactional id, TLS/SASL.
	Session []kgo.Opt
	// Markers are the options of the commit confirmation's own client
	// (confirm.go says why its own): seeds, TLS/SASL, logger.
	Markers []kgo.Opt
	Names   topics.Names
	Group   string
	// TransactionalID is the member's, as in Session: named in the log
	// line of a commit the broker aborted after reporting it.
	TransactionalID string
	// TransactionTimeout bounds an end, a flush, a confirmation and one
	// abort; hangingAge and the stall checks are multiples of it.
	TransactionTimeout time.Duration
	// BrokerOutage is how long a begin, an abort or an offset fetch keeps
	// being retried while the broker cannot be reached.
	BrokerOutage time.Duration
	// Store keeps the transactions this member treated as aborted
	// (owntxns.go), across restarts on the same data dir.
	Store *state.Store
	// Owned lists the partitions the member owns. It is called only on
	// the goroutine that calls Commit and Reset.
	Owned  func() []int32
	Logger *slog.Logger
	Metrics
}

// Metrics are the session's collectors; the executor registers them.
type Metrics struct {
	TxnDuration     prometheus.Observer // the end of each transaction
	ConfirmDuration prometheus.Observer // each confirmation's wait for the markers
	// AbortedAfterCommit counts transactions EndTxn reported committed
	// whose started events a Confirm partition then showed aborted.
	AbortedAfterCommit prometheus.Counter
	// AbortedBehindOffsets counts transactions whose end failed, whose
	// offsets the group showed committed, and whose records a marker
	// showed aborted (offsets.go, settleUnknown).
	AbortedBehindOffsets prometheus.Counter
	// CommittedAheadOfOffsets counts transactions whose end failed,
	// whose offsets the group showed not moved, and whose records the
	// markers showed committed (offsets.go, settleUnknown).
	CommittedAheadOfOffsets prometheus.Counter
	HangingCommitted        prometheus.Counter     // hanging transactions closed
	HangingUnclosed         *prometheus.CounterVec // found and not closed, by reason
	HangingBlind            prometheus.Gauge       // partitions the last hanging check could not describe
}

// Session is one member's transactional producer (see the package doc
// for the caller's duties, what blocks and who owns which goroutine).
type Session struct {
	cfg     Config
	gs      *kgo.GroupTransactSession
	adm     *kadm.Client
	markers *kgo.Client // the commit confirmation's own connections (confirm.go)

	// Touched only on the goroutine that calls Commit, Reset and
	// CheckHanging.
	aborted *abortedTxns // transactions this member treated as aborted (owntxns.go)
	// offsetsUnsure: a transaction end failed, so it may have committed
	// although the session rewound to the offsets before it (offsets.go).
	offsetsUnsure  bool
	loggedPID      int64               // the producer id last named in the log (pidChanged)
	topicIDs       map[string][16]byte // topic ids for the marker fetches (confirm.go)
	lastStallCheck time.Time           // hanging.go

	end struct {
		sync.Mutex
		// cancel ends a transaction end or a confirmation that waits on a
		// blocked group callback (Interrupt).
		cancel context.CancelFunc
	}
}

// retryMetadataAge is the group session's minimum time between metadata
// refreshes. franz-go retries a produce that a partition refused with a
// retriable error (CONCURRENT_TRANSACTIONS among them: since transactions
// v2 a produce can reach a partition before the markers of the member's
// previous transaction are written) only after a metadata refresh, and
// holds that refresh to its minimum age, 5 s by default: every write of
// the member, answers included, then waits up to 5 s. A tenth of a second
// is the Java producer's retry backoff; a sick cluster costs a metadata
// request per client at most every 100 ms instead of every 5 s.
const retryMetadataAge = 100 * time.Millisecond

// New loads the member's own aborts, then makes the group session (which
// joins the group at the first poll of Client) and the confirmation's
// client.
func New(cfg Config) (*Session, error) {
	cfg.Metrics = cfg.Metrics.orUnregistered()
	aborted, err := loadAbortedTxns(cfg.Store, time.Now())
	if err != nil {
		return nil, err
	}
	s := &Session{cfg: cfg, aborted: aborted, loggedPID: -1}
	opts := append([]kgo.Opt{kgo.MetadataMinAge(retryMetadataAge)}, cfg.Session...)
	if s.gs, err = kgo.NewGroupTransactSession(opts...); err != nil {
		return nil, fmt.Errorf("executor: client: %w", err)
	}
	s.adm = kadm.NewClient(s.gs.Client())
	if s.markers, err = kgo.NewClient(cfg.Markers...); err != nil {
		s.gs.Close()
		return nil, fmt.Errorf("executor: commit confirmation client: %w", err)
	}
	return s, nil
}

// Client is the group session's client: the caller polls it, allows
// rebalances on it, pauses and resumes its fetches. Transactions are the
// session's alone.
func (s *Session) Client() *kgo.Client { return s.gs.Client() }

// Close closes both clients; the group session's leaves the group. A
// Commit in progress fails. Call it after the loop returned (or under it,
// to simulate a crash).
func (s *Session) Close() {
	s.gs.Close()
	s.markers.Close()
}

// Interrupt cuts short a transaction end or a confirmation in progress
// (which then reports Unknown or Unconfirmed): the group wants to run a
// callback that the caller's poll is blocking, and a member that lost its
// session waits in End for a heartbeat only that callback can unblock.
// Safe for concurrent use; a no-op when neither is in progress.
func (s *Session) Interrupt() {
	s.end.Lock()
	defer s.end.Unlock()
	if s.end.cancel != nil {
		s.end.cancel()
	}
}

// interruptible is a context for the end of a transaction (and its
// confirmation), bounded by the transaction timeout, cut short by
// Interrupt and not by ctx's cancellation; done releases it.
func (s *Session) interruptible(ctx context.Context) (context.Context, func()) {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.TransactionTimeout)
	s.end.Lock()
	s.end.cancel = cancel
	s.end.Unlock()
	return ictx, func() {
		s.end.Lock()
		s.end.cancel = nil
		s.end.Unlock()
		cancel()
	}
}

// orUnregistered fills the collectors left nil with unregistered ones.
func (m Metrics) orUnregistered() Metrics {
	if m.TxnDuration == nil {
		m.TxnDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "txn_duration_seconds"})
	}
	if m.ConfirmDuration == nil {
		m.ConfirmDuration = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "confirm_duration_seconds"})
	}
	if m.AbortedAfterCommit == nil {
		m.AbortedAfterCommit = prometheus.NewCounter(prometheus.CounterOpts{Name: "commits_aborted_after_success"})
	}
	if m.AbortedBehindOffsets == nil {
		m.AbortedBehindOffsets = prometheus.NewCounter(prometheus.CounterOpts{Name: "aborted_behind_offsets"})
	}
	if m.CommittedAheadOfOffsets == nil {
		m.CommittedAheadOfOffsets = prometheus.NewCounter(prometheus.CounterOpts{Name: "committed_ahead_of_offsets"})
	}
	if m.HangingCommitted == nil {
		m.HangingCommitted = prometheus.NewCounter(prometheus.CounterOpts{Name: "hanging_committed"})
	}
	if m.HangingUnclosed == nil {
		m.HangingUnclosed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "hanging_unclosed"}, []string{"reason"})
	}
	if m.HangingBlind == nil {
		m.HangingBlind = prometheus.NewGauge(prometheus.GaugeOpts{Name: "hanging_blind"})
	}
	return m
}
