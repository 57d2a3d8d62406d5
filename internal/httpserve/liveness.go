package httpserve

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Liveness tells whether a process's loops still turn: each loop
// registered with Loop beats (Beat) once per turn, and the process is
// live while every registered loop has beaten within its bound. /healthz answers from it
// (Handoff), so that a liveness probe restarts a process that hangs and
// leaves alone one that only waits (a start that retries, a member that
// waits out a broker's outage: each attempt is a turn).
//
// Why a bound per loop, not one for the process: a loop's longest
// legitimate turn is its own (the executor's tick may wait out a broker
// outage inside a transaction; the gateway's readiness check takes
// seconds), and a bound that fits the slowest would hide a hang of the
// quickest.
//
// Safe for concurrent use; a beat is a map lookup and an atomic store.
type Liveness struct {
	now func() time.Time
	mu  struct {
		sync.Mutex
		loops map[string]*loopBeat
	}
}

// loopBeat is one loop's bound and last turn (unix nanoseconds).
type loopBeat struct {
	bound time.Duration
	last  atomic.Int64
}

// NewLiveness returns a Liveness with no loop: live.
func NewLiveness() *Liveness { return newLivenessAt(time.Now) }

func newLivenessAt(now func() time.Time) *Liveness {
	l := &Liveness{now: now}
	l.mu.loops = map[string]*loopBeat{}
	return l
}

// Loop registers the loop name, which must turn (Beat) at least once per
// bound from now on. Registering a name again restarts its clock (a
// restarted loop).
func (l *Liveness) Loop(name string, bound time.Duration) {
	b := &loopBeat{bound: bound}
	b.last.Store(l.now().UnixNano())
	l.mu.Lock()
	l.mu.loops[name] = b
	l.mu.Unlock()
}

// Beat records a turn of the loop name; a name not registered (a loop
// not started yet, or stopped) is ignored.
func (l *Liveness) Beat(name string) {
	l.mu.Lock()
	b := l.mu.loops[name]
	l.mu.Unlock()
	if b != nil {
		b.last.Store(l.now().UnixNano())
	}
}

// Stop forgets the loop name: it ended on purpose.
func (l *Liveness) Stop(name string) {
	l.mu.Lock()
	delete(l.mu.loops, name)
	l.mu.Unlock()
}

// Stalled describes each loop that has not turned within its bound, in
// name order; none when the process is live.
func (l *Liveness) Stalled() []string {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for name, b := range l.mu.loops {
		if since := now.Sub(time.Unix(0, b.last.Load())); since > b.bound {
			out = append(out, fmt.Sprintf("%s has not turned for %s (bound %s)", name, since.Round(time.Second), b.bound))
		}
	}
	sort.Strings(out)
	return out
}

// ServeHTTP answers /healthz: 200 "ok" while live, 503 naming the stalled
// loops otherwise.
func (l *Liveness) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	if stalled := l.Stalled(); len(stalled) > 0 {
		http.Error(w, "stalled: "+strings.Join(stalled, "; "), http.StatusServiceUnavailable)
		return
	}
	fmt.Fprintln(w, "ok")
}
