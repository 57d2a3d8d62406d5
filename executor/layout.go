package executor

import (
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/topics"
)

// The partition-count guard (topicadmin/layout.go has the why).
//
// A member decides only while the topics have the partition count keys
// are routed by, recorded in the meta topic when they were first seen,
// and while the group gives it partition p of intents exactly when it
// gives it partition p of control. When either does not hold it stops
// deciding: it pauses its fetches, rewinds what it polled, fails /readyz
// and sets toolexec_executor_layout_mismatch, which an alert watches.
// Calls already started still record their outcomes.
//
// Two kinds, two lifetimes. Topics found at start with another count than
// the recorded one stay refused: only an operator ends that (docs/DESIGN.md,
// "Adding partitions"). An assignment that breaks the rule is judged
// afresh at every assignment: right after a broker restart the group can
// assign intents partitions while the control topic's metadata is not
// loaded yet, which the next assignment repairs (refused for good, such a
// member would never decide its intents again). An assignment beyond the recorded count also comes from
// added partitions and keeps the member refusing for as long as the group
// keeps assigning it.

// layoutGuard is the partition-count guard of one member. The loop alone
// calls its methods; Ready reads layoutRefused from any goroutine.
type layoutGuard struct {
	names      topics.Names
	partitions int32 // the routing count, once checkRouting has read it
	mismatch   prometheus.Gauge
	log        *slog.Logger
	pauser     fetchPauser // the session's client; a plain one in tests

	layoutRefused atomic.Bool // the topics' partitions or the assignment do not match the routing
	layoutAtStart string      // why the topics found at start were refused; "" when they were not
}

// checkAssignment runs on the loop goroutine, on each assignment the
// group's callback queued (the callback itself may run before the layout
// is known: kgo joins the group as soon as the client exists).
func (g *layoutGuard) checkAssignment(parts map[string][]int32) {
	in := slices.Sorted(slices.Values(parts[g.names.Intents]))
	ctl := slices.Sorted(slices.Values(parts[g.names.Control]))
	switch {
	case g.layoutAtStart != "":
		g.refuseLayout(g.layoutAtStart)
	case !slices.Equal(in, ctl):
		g.refuseLayout(fmt.Sprintf("the group assigned intents partitions %v but control partitions %v", in, ctl))
	case len(in) > 0 && in[len(in)-1] >= g.partitions:
		g.refuseLayout(fmt.Sprintf("the group assigned partition %d, but keys are routed by %d partitions: partitions were added", in[len(in)-1], g.partitions))
	default:
		g.acceptLayout()
	}
}

// refuseLayout stops the member deciding until an assignment that keeps
// the rule (never, for topics refused at start).
func (g *layoutGuard) refuseLayout(why string) {
	if g.layoutRefused.Swap(true) {
		return
	}
	g.mismatch.Set(1)
	g.log.Error("the topics' partitions or this member's assignment do not match the routing; it decides nothing meanwhile (docs/DESIGN.md, adding partitions)", "why", why)
}

// acceptLayout ends a refusal an assignment caused.
func (g *layoutGuard) acceptLayout() {
	if !g.layoutRefused.Swap(false) {
		return
	}
	g.mismatch.Set(0)
	g.pauser.ResumeFetchTopics(g.names.Intents, g.names.Control)
	g.log.Info("this member's assignment matches the routing again; deciding")
}

// fetchPauser is the part of the client that pauses fetches (the
// session's client; a plain one in tests).
type fetchPauser interface {
	PauseFetchTopics(...string) []string
	ResumeFetchTopics(...string)
}

// holdIfLayoutRefused pauses every fetch while the layout is refused, and
// reports whether it is: records polled in this iteration must then be
// rewound, not decided.
func (g *layoutGuard) holdIfLayoutRefused() bool {
	if !g.layoutRefused.Load() {
		return false
	}
	g.pauser.PauseFetchTopics(g.names.Intents, g.names.Control)
	return true
}
