package executor

import "time"

// restoreTally sums the restores that follow an assignment, so that the
// log says once per assignment what was restored ("partitions restored":
// how many, how many events, how long since the assignment) instead of a
// line per partition; those lines are at debug level. A restore outside
// an assignment's warm-up (after a transaction end whose outcome was
// unknown, or a view write that failed) is rare and worth its own line.
// Loop-owned.
type restoreTally struct {
	open       bool // an assignment is not yet all restored
	since      time.Time
	partitions int
	events     int64
}

// assigned opens a tally at an assignment (one still open goes on).
func (t *restoreTally) assigned(now time.Time) {
	if !t.open {
		*t = restoreTally{open: true, since: now}
	}
}

// add counts a restore; it reports false outside a warm-up.
func (t *restoreTally) add(events int64) bool {
	if !t.open {
		return false
	}
	t.partitions++
	t.events += events
	return true
}

// noteRestored logs the summary once every partition the member holds is
// restored after an assignment.
func (e *Executor) noteRestored() {
	t := &e.restores
	if !t.open || !e.core.AllRestored() {
		return
	}
	e.cfg.Logger.Info("partitions restored", "partitions", t.partitions, "events", t.events, "took", e.cfg.Now().Sub(t.since).Round(time.Millisecond))
	*t = restoreTally{}
}
