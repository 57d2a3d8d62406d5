package main

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// phase is one load phase against one member: warm (not measured), then
// the measured window [warm, total). Throughput counts the answers that
// arrive in the window; latency is taken over the intents sent in it.
type phase struct {
	tag   string // intent ids are "<tag>-<seq>"
	base  time.Time
	warm  time.Duration
	total time.Duration
	// tokens holds one entry per outstanding intent in a closed loop (nil
	// when paced): an answer frees one.
	tokens chan struct{}
	// onSuccess is told of every first-time success (not a replay), so
	// that a later phase can repeat the key.
	onSuccess func(seq int)

	mu struct {
		sync.Mutex
		sentAt          []time.Duration // by seq, relative to base
		answered        []bool
		answers         int
		inWindow        int
		replays         int
		replaysInWindow int
		lat             []time.Duration
		statuses        map[string]int
		dups            int
		err             error
		// lastInWindow and maxGap find stalls: the longest time in the
		// measured window without a terminal answer.
		lastInWindow time.Duration
		maxGap       time.Duration
	}
}

func newPhase(tag string, warm, measured time.Duration) *phase {
	ph := &phase{tag: tag, base: time.Now(), warm: warm, total: warm + measured}
	ph.mu.statuses = map[string]int{}
	return ph
}

func (ph *phase) sent(seq int, at time.Duration) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if seq != len(ph.mu.sentAt) {
		panic(fmt.Sprintf("bench: phase %s: intent %d sent out of order", ph.tag, seq))
	}
	ph.mu.sentAt = append(ph.mu.sentAt, at)
	ph.mu.answered = append(ph.mu.answered, false)
}

func (ph *phase) failed(err error) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if ph.mu.err == nil {
		ph.mu.err = err
	}
}

// answer records the answer to intent seq, received at now. Non-terminal
// answers (pending) are counted and otherwise ignored; a second terminal
// answer to one intent is counted as a duplicate.
func (ph *phase) answer(seq int, now time.Time, res *wire.Result) {
	if !ph.record(seq, now, res) {
		return
	}
	if ph.tokens != nil {
		select {
		case <-ph.tokens:
		default:
		}
	}
	if ph.onSuccess != nil && res.Status == codes.StatusSucceeded && !res.WasReplay {
		ph.onSuccess(seq)
	}
}

func (ph *phase) record(seq int, now time.Time, res *wire.Result) bool {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	ph.mu.statuses[res.Status]++
	if !codes.Terminal(res.Status) {
		return false
	}
	if seq >= len(ph.mu.answered) || ph.mu.answered[seq] {
		ph.mu.dups++
		return false
	}
	ph.mu.answered[seq] = true
	ph.mu.answers++
	at := now.Sub(ph.base)
	inWindow := func(d time.Duration) bool { return d >= ph.warm && d < ph.total }
	if inWindow(at) {
		ph.noteGapLocked(at)
		ph.mu.inWindow++
		if res.WasReplay {
			ph.mu.replaysInWindow++
		}
	}
	if res.WasReplay {
		ph.mu.replays++
	}
	if s := ph.mu.sentAt[seq]; inWindow(s) {
		ph.mu.lat = append(ph.mu.lat, at-s)
	}
	return true
}

// noteGapLocked notes an answer at in the window, measuring the gap to the
// previous one (to the window's start for the first).
func (ph *phase) noteGapLocked(at time.Duration) {
	from := max(ph.mu.lastInWindow, ph.warm)
	ph.mu.maxGap = max(ph.mu.maxGap, at-from)
	ph.mu.lastInWindow = at
}

// drain waits until every intent sent has its answer, or timeout.
func (ph *phase) drain(ctx context.Context, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		ph.mu.Lock()
		done := ph.mu.answers >= len(ph.mu.sentAt)
		ph.mu.Unlock()
		if done {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// phaseResult is what one phase measured.
type phaseResult struct {
	Rate       float64 // terminal answers per second in the window
	ReplayRate float64 // of which replays
	P50, P99   time.Duration
	Min, Max   time.Duration
	Sent       int
	Answers    int
	Lost       int // intents without a terminal answer after the drain
	// MaxGap is the longest time in the measured window without a
	// terminal answer (from the window's start, and to its end): a stall.
	MaxGap   time.Duration
	Dups     int
	Statuses map[string]int
	Err      error
	// HostCPU is this process's CPU time per answer over the whole phase:
	// the load generator and, with kfake, the broker.
	HostCPU float64
	// Wall is the time between the two counter snapshots around the phase
	// (warm-up, measured window and drain).
	Wall time.Duration
}

func (ph *phase) result() phaseResult {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	w := (ph.total - ph.warm).Seconds()
	r := phaseResult{
		Rate: float64(ph.mu.inWindow) / w, ReplayRate: float64(ph.mu.replaysInWindow) / w,
		Sent: len(ph.mu.sentAt), Lost: len(ph.mu.sentAt) - ph.mu.answers, Dups: ph.mu.dups, Answers: ph.mu.answers,
		Statuses: maps.Clone(ph.mu.statuses), Err: ph.mu.err,
		MaxGap: max(ph.mu.maxGap, ph.total-max(ph.mu.lastInWindow, ph.warm)),
	}
	lat := slices.Clone(ph.mu.lat)
	slices.Sort(lat)
	r.P50, r.P99 = quantile(lat, 0.50), quantile(lat, 0.99)
	if len(lat) > 0 {
		r.Min, r.Max = lat[0], lat[len(lat)-1]
	}
	return r
}

// quantile is the nearest-rank quantile of sorted values (0 when empty).
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
