package partition

import (
	"log/slog"
	"time"

	"github.com/atmostonce/toolexec/overlay"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// Config is what the core needs to know of its member.
type Config struct {
	// Partitions is the count keys are routed by (topicadmin.RoutingPartitions).
	Partitions int32
	MaxWaiters int
	// Policy looks up a tool's policy; false for an unknown tool.
	Policy func(tool string) (saga.Policy, bool)
	// NearestTool suggests a tool for an unknown one (saga.Env.NearestTool).
	NearestTool func(tenant, tool string) (string, bool)
	// SweepInterval is how often expired keys are swept.
	SweepInterval time.Duration
	// SnapshotInterval is how often a snapshot round starts.
	SnapshotInterval time.Duration
	// SnapshotStep bounds the records one tick restates; 0 means
	// SnapshotStep (tests take rounds over a few records in many ticks).
	SnapshotStep int
	// CheckSnapshot says why a snapshot event cannot be produced (too
	// large), or nil: such a record is not restated, and its partition
	// gets no round event this time.
	CheckSnapshot func(*saga.Event) error
	// Admission bounds the calls the member takes on, and each tenant's
	// share (admission.go); the zero value admits every call.
	Admission Admission
	Logger    *slog.Logger
}

// View is what the core reads of the member's materialised view. Every
// read is synchronous and its error is fatal to the member (the view is a
// local Pebble store). state.Store implements it through the executor's
// adapter; tests use a map.
type View interface {
	overlay.Base
	// ReadPending reports whether a read is taken on and not answered.
	ReadPending(id overlay.ReadID) (bool, error)
	// PendingReads lists up to limit pending reads of partition p.
	PendingReads(p int32, limit int) ([]*saga.Event, error)
	// Expired lists up to limit (tenant, key) whose retention passed, or
	// whose request for approval lapsed (saga.Record.SweepAt).
	Expired(now int64, limit int) ([][2]string, error)
	// ScanRecords walks records in key order after (afterTenant, afterKey).
	ScanRecords(afterTenant, afterKey string, limit int, fn func(*saga.Record) error) (int, error)
	// Checkpoint is the next offset of events partition p the view holds.
	Checkpoint(p int32) (int64, error)
	// CountInDoubt counts the keys of p in doubt in the view.
	CountInDoubt(p int32) (int, error)
	// InDoubtAfter lists up to limit (tenant, key) of p in doubt in the
	// view, in the doubt index's order, after (afterTenant, afterKey); an
	// empty afterTenant starts from the first.
	InDoubtAfter(p int32, afterTenant, afterKey string, limit int) ([][2]string, error)
}

// Core is the decision state of every partition a member owns. Not safe
// for concurrent use: one goroutine (the executor's loop) owns it.
type Core struct {
	cfg   Config
	view  View
	parts map[int32]*part
	// epochSeq is the last ownership epoch handed out.
	epochSeq uint64
	calls    inflight
	// unrecorded are finished calls whose outcome is not committed yet.
	unrecorded []Completion
	poison     *poisoned
	occ        *occupancy
	admit      func(tenant, tool string) *saga.Refusal // occ.admit, made once
	round      *round
	lastRound  time.Time // when the last round ended (or the core was made)
	lastSweep  time.Time
}

// New makes a core that owns nothing yet. now starts the snapshot
// interval.
func New(cfg Config, v View, now time.Time) *Core {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.SnapshotStep <= 0 {
		cfg.SnapshotStep = SnapshotStep
	}
	c := &Core{cfg: cfg, view: v, parts: map[int32]*part{}, calls: newInflight(), poison: newPoisoned(), occ: newOccupancy(cfg.Admission), lastRound: now}
	c.admit = c.occ.admit
	return c
}

// Finished hands over calls that returned. Their outcomes are recorded by
// the next Step whose transaction commits.
func (c *Core) Finished(done ...Completion) { c.unrecorded = append(c.unrecorded, done...) }

// Unrecorded is the number of finished calls whose outcome is not
// committed yet.
func (c *Core) Unrecorded() int { return len(c.unrecorded) }

// partitionOf is the owner partition of (tenant, key).
func (c *Core) partitionOf(tenant, key string) int32 {
	return wire.Partition(wire.RoutingKey(tenant, key), c.cfg.Partitions)
}

func (c *Core) env(now int64, rk string, done map[string]bool) saga.Env {
	return saga.Env{Now: now, InFlight: c.calls.keyInFlight(rk) && !done[rk], MaxWaiters: c.cfg.MaxWaiters, Policy: c.cfg.Policy,
		NearestTool: c.cfg.NearestTool, Admit: c.admit}
}
