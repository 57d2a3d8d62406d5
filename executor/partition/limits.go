package partition

import "time"

// Every bound of the core, with the reason for its value.
const (
	// IdleRestoreAfter is how long a newly assigned partition that has
	// received no record waits before it is restored anyway, so that the
	// reads its previous owner left are answered without new traffic. The
	// wait lets the previous owner's last transaction settle first, and is
	// also the interval between two such attempts.
	IdleRestoreAfter = 2 * time.Second
	// GapRetry is how often a gapped partition's restore is tried again:
	// it reads the partition's log, so not every tick.
	GapRetry = 30 * time.Second
	// ResumeReadsLimit bounds the reads taken on at once per partition;
	// the rest wait for the next restore of the partition.
	ResumeReadsLimit = 10000
	// SweepLimit bounds the keys one sweep expires, so that a sweep after
	// a long pause never holds up a tick; the rest go in the next sweep.
	SweepLimit = 1000
	// SnapshotStep bounds the records one tick restates, so that a round
	// over a million keys never holds up a tick: it spreads over about
	// 4,000 ticks (minutes), well inside any interval.
	SnapshotStep = 256
	// OrphanStep bounds the keys in doubt one tick examines after a
	// restore (orphans.go): each is one record read, most are passed over
	// (unknown already, or in flight), so a partition with thousands of
	// escalated keys spreads its walk over ticks instead of holding one up.
	OrphanStep = 256
	// SnapshotReadsLimit bounds the pending reads restated per partition
	// and round; reads live from their start to their answer, so there
	// are few.
	SnapshotReadsLimit = ResumeReadsLimit
	// MaxPoisoned bounds the origins remembered; the oldest is forgotten
	// first. An origin is needed only until its input is polled again,
	// right after the abort.
	MaxPoisoned = 1024

	// ShareFactor is the dynamic threshold's factor (admission.go): a
	// tenant may hold fewer calls of a pool than ShareFactor times its
	// free places. 4: a tenant alone fills 80% of a pool (a burst of one
	// tenant is queued, not refused, up to there), two that flood hold 4/9
	// each, and a tenant that comes later finds at least a ninth free.
	ShareFactor = 4
	// DefaultRetryAfter is a refusal's retry hint before any call of its
	// tool completed: about a call's time for a tool answering in
	// hundreds of milliseconds.
	DefaultRetryAfter = time.Second
	// MinRetryAfter and MaxRetryAfter bound the hint, which is otherwise
	// how long the tool's calls hold their places: below 100 ms a caller
	// told to wait would come back before a place could free; past 30 s a
	// slow tool's hint would outlast most callers' own deadlines.
	MinRetryAfter = 100 * time.Millisecond
	MaxRetryAfter = 30 * time.Second
)
