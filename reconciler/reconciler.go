package reconciler

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/internal/handoff"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/topicadmin"
)

// ErrFatal wraps errors after which the reconciler stops: a bad event in
// the log (skipping it could hide a key in doubt), a failing store.
var ErrFatal = errors.New("reconciler: fatal")

// ErrTopics is returned by New when the executor's topics are missing.
var ErrTopics = errors.New("reconciler: topics not found")

// ErrClosed is returned by Run when the client was closed under it.
var ErrClosed = errors.New("reconciler: closed")

// Reconciler is one member of the reconciler group. Run it once; it is not
// safe to call Run concurrently. Ready, Rows, Metrics and Handler are safe
// for concurrent use.
type Reconciler struct {
	cfg      Config
	m        *Metrics
	cl       *kgo.Client
	adm      *kadm.Client
	store    *state.Store
	lookup   Lookup
	nControl int32 // partitions of the control topic, for routing commands
	work     *workers
	// startOffset, when set (tests), replaces the broker's answer for the
	// log start of an events partition (gap.go).
	startOffset func(ctx context.Context, p int32) (int64, error)

	// Loop-owned: touched only by the loop goroutine.
	owned    map[int32]*partition
	epochs   uint64          // assignments so far: the next partition.epoch
	running  map[string]bool // routing key -> a retry or probe runs for it
	lastScan time.Time
	warned   map[int32]bool // partitions whose doubt index exceeded MaxScan
	// outage: the last lag measurement failed; quietSince (unix ms): when
	// the last outage ended, or the member started (grace.go).
	outage     bool
	quietSince int64

	errs toolErrors // the tools' last errors, for the console

	changes handoff.Queue[ownershipChange]
	joined  atomic.Bool // the group assigned this member partitions at least once
	ready   atomic.Bool
	wakeMu  sync.Mutex
	wakeFn  context.CancelFunc

	mu struct {
		sync.Mutex
		rows      []Row          // the last scan's, for /pending
		started   map[string]int // by tool: keys started and within their pending_ttl at the last scan
		owned     []int32        // the partitions the last scan covered
		approvals []ApprovalRow  // the last scan's keys awaiting approval (approvals.go)
	}
}

// partition is this member's hold on one events partition.
type partition struct {
	epoch    uint64 // bumped at every assignment: results of older epochs are dropped
	next     int64  // next offset to fold; equal to the stored checkpoint
	caughtUp bool   // the view reached the log's stable end once since the assignment
	// cursor is the last key of the doubt index a scan examined; the next
	// scan starts after it (scan.go).
	cursor doubtPos
	// escalated holds the keys found escalated, by routing key, until an
	// event of the key arrives: scans count them without examining them.
	escalated map[string]escalatedKey
	// The last two measurements of the log's stable offset (measureLag):
	// the offset and when it was taken (unix ms). A retry waits for a view
	// that folded a measurement taken after its deadline (freshSince).
	stable, stableAt         int64
	prevStable, prevStableAt int64
}

// New validates cfg, opens the view and checks that the executor's topics
// exist. It joins nothing: the group is joined when Run polls.
func New(ctx context.Context, cfg Config) (*Reconciler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &Reconciler{cfg: cfg, m: newMetrics(cfg.Registerer), lookup: RegistryLookup(cfg.Tools),
		owned: map[int32]*partition{}, running: map[string]bool{}, warned: map[int32]bool{}}
	r.quietSince = r.now() // a member that starts cannot know whether an outage just ended
	if err := r.open(ctx); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Reconciler) open(ctx context.Context) error {
	st, err := state.Open(filepath.Join(r.cfg.DataDir, "view"), state.Options{CacheBytes: 8 << 20})
	if err != nil {
		return err
	}
	r.store = st
	cl, err := kgo.NewClient(r.clientOpts()...)
	if err != nil {
		return fmt.Errorf("reconciler: client: %w", err)
	}
	r.cl, r.adm = cl, kadm.NewClient(cl)
	if r.nControl, err = r.layout(ctx); err != nil {
		return err
	}
	if err := r.checkDurability(ctx); err != nil {
		return err
	}
	r.work = newWorkers(r.cfg, r.wake)
	return nil
}

// checkDurability refuses a cluster of more than one broker that could
// lose the events the reconciler folds or the commands it sends
// (topicadmin/durability.go), unless Config.AllowWeakDurability.
func (r *Reconciler) checkDurability(ctx context.Context) error {
	d, err := topicadmin.ReadDurability(ctx, r.adm, r.cfg.Names.Events, r.cfg.Names.Control)
	if err != nil {
		return fmt.Errorf("reconciler: %w", err)
	}
	return topicadmin.StartDurability(d, topicadmin.Production, r.cfg.AllowWeakDurability, r.m.Durability, r.cfg.Logger)
}

// layout returns the control topic's partition count, checking that the
// event log is co-partitioned with it.
func (r *Reconciler) layout(ctx context.Context) (int32, error) {
	n := r.cfg.Names
	td, err := r.adm.ListTopics(ctx, n.Events, n.Control)
	if err != nil {
		return 0, fmt.Errorf("reconciler: list topics: %w", err)
	}
	ev, ctl := td[n.Events], td[n.Control]
	if ev.Err != nil || ctl.Err != nil || len(ev.Partitions) == 0 || len(ctl.Partitions) == 0 {
		return 0, fmt.Errorf("%w: %s and %s must exist (the executor creates them at start)", ErrTopics, n.Events, n.Control)
	}
	if len(ev.Partitions) != len(ctl.Partitions) {
		return 0, fmt.Errorf("%w: %s has %d partitions and %s %d; they must be co-partitioned", ErrTopics, n.Events, len(ev.Partitions), n.Control, len(ctl.Partitions))
	}
	return int32(len(ctl.Partitions)), nil
}

func (r *Reconciler) clientOpts() []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(r.cfg.Brokers...),
		kgo.ConsumerGroup(r.cfg.Group),
		kgo.ConsumeTopics(r.cfg.Names.Events),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		// Transaction markers come through, so the fold's position reaches
		// the stable end of a partition and "caught up" can be told.
		kgo.KeepControlRecords(),
		// The view's checkpoint, not the group's committed offset, is where
		// a member resumes (resumeOffsets): it commits in the same Pebble
		// batch as the records it covers.
		kgo.DisableAutoCommit(),
		kgo.AdjustFetchOffsetsFn(r.resumeOffsets),
		kgo.BlockRebalanceOnPoll(),
		kgo.OnPartitionsAssigned(r.onAssigned),
		kgo.OnPartitionsRevoked(r.onRevoked),
		kgo.OnPartitionsLost(r.onRevoked),
		kgo.SessionTimeout(r.cfg.SessionTimeout),
		kgo.HeartbeatInterval(min(3*time.Second, r.cfg.SessionTimeout/4)),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
	}
	return append(opts, r.cfg.ClientOpts...)
}

// Ready reports whether the member joined the group and its view of every
// partition it owns has caught up with the log.
func (r *Reconciler) Ready() bool { return r.ready.Load() }

// Metrics returns the reconciler's collectors.
func (r *Reconciler) Metrics() *Metrics { return r.m }

// Rows returns the keys in doubt past their deadline, as of the last scan,
// in the partitions this member owns.
func (r *Reconciler) Rows() []Row {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Row(nil), r.mu.rows...)
}

// Started returns, by tool, the keys whose call (or compensation) was
// started and is within its pending_ttl, as of the last scan, in the
// partitions this member owns: calls an executor may still be running.
func (r *Reconciler) Started() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.mu.started)
}

// Coverage returns the events partitions the last scan covered (owned and
// caught up) and the topic's partition count: the rows and gauges describe
// those partitions only.
func (r *Reconciler) Coverage() (scanned []int32, partitions int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.mu.owned), r.nControl
}

// Close releases the client and the store. Call it after Run returned.
func (r *Reconciler) Close() {
	if r.work != nil {
		r.work.stop()
	}
	if r.cl != nil {
		r.cl.Close()
	}
	if r.store != nil {
		_ = r.store.Close()
	}
}

func (r *Reconciler) now() int64 { return r.cfg.Now().UnixMilli() }
