package executor

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/topicadmin"
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

// checkRouting compares the topics found at start with the recorded
// routing count.
func (e *Executor) checkRouting(ctx context.Context) error {
	opts := append(append([]kgo.Opt{kgo.SeedBrokers(e.cfg.Brokers...)}, e.cfg.Connect...), e.cfg.ClientOpts...)
	routing, err := topicadmin.RoutingPartitions(ctx, opts, e.cfg.Names, e.layout.Partitions)
	if err != nil {
		return err
	}
	if routing != e.layout.Partitions {
		e.layoutAtStart = fmt.Sprintf("%s has %d partitions but keys are routed by the %d recorded in %s: partitions were added",
			e.cfg.Names.Intents, e.layout.Partitions, routing, e.cfg.Names.Meta)
		e.refuseLayout(e.layoutAtStart)
	}
	e.layout.Partitions = routing
	return nil
}

// checkAssignment runs on the loop goroutine, on each assignment the
// group's callback queued (the callback itself may run before the layout
// is known: kgo joins the group as soon as the client exists).
func (e *Executor) checkAssignment(parts map[string][]int32) {
	in := slices.Sorted(slices.Values(parts[e.cfg.Names.Intents]))
	ctl := slices.Sorted(slices.Values(parts[e.cfg.Names.Control]))
	switch {
	case e.layoutAtStart != "":
		e.refuseLayout(e.layoutAtStart)
	case !slices.Equal(in, ctl):
		e.refuseLayout(fmt.Sprintf("the group assigned intents partitions %v but control partitions %v", in, ctl))
	case len(in) > 0 && in[len(in)-1] >= e.layout.Partitions:
		e.refuseLayout(fmt.Sprintf("the group assigned partition %d, but keys are routed by %d partitions: partitions were added", in[len(in)-1], e.layout.Partitions))
	default:
		e.acceptLayout()
	}
}

// refuseLayout stops the member deciding until an assignment that keeps
// the rule (never, for topics refused at start).
func (e *Executor) refuseLayout(why string) {
	if e.layoutRefused.Swap(true) {
		return
	}
	e.m.LayoutMismatch.Set(1)
	e.cfg.Logger.Error("the topics' partitions or this member's assignment do not match the routing; it decides nothing meanwhile (docs/DESIGN.md, adding partitions)", "why", why)
}

// acceptLayout ends a refusal an assignment caused.
func (e *Executor) acceptLayout() {
	if !e.layoutRefused.Swap(false) {
		return
	}
	e.m.LayoutMismatch.Set(0)
	e.pauser.ResumeFetchTopics(e.cfg.Names.Intents, e.cfg.Names.Control)
	e.cfg.Logger.Info("this member's assignment matches the routing again; deciding")
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
func (e *Executor) holdIfLayoutRefused() bool {
	if !e.layoutRefused.Load() {
		return false
	}
	e.pauser.PauseFetchTopics(e.cfg.Names.Intents, e.cfg.Names.Control)
	return true
}
