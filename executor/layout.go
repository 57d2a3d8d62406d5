package executor

import (
	"context"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/topicadmin"
)

// The partition-count guard (issue 12; topicadmin/layout.go has the why).
//
// A member decides only while the topics have the partition count keys
// are routed by, recorded in the meta topic when they were first seen,
// and while the group gives it partition p of intents exactly when it
// gives it partition p of control. When either stops holding (an operator
// added partitions: at start, or while it runs, which the group shows as
// an assignment of a new partition, or of unequal partitions of the two
// topics) it stops deciding: it pauses its fetches, rewinds what it
// polled, fails /readyz and sets toolexec_executor_layout_mismatch, which
// an alert watches. Calls already started still record their outcomes.
// Only an operator can end this (docs/DESIGN.md, "Adding partitions").

// checkRouting compares the topics found at start with the recorded
// routing count.
func (e *Executor) checkRouting(ctx context.Context) error {
	opts := append([]kgo.Opt{kgo.SeedBrokers(e.cfg.Brokers...)}, e.cfg.ClientOpts...)
	routing, err := topicadmin.RoutingPartitions(ctx, opts, e.cfg.Names, e.layout.Partitions)
	if err != nil {
		return err
	}
	if routing != e.layout.Partitions {
		e.refuseLayout(fmt.Sprintf("%s has %d partitions but keys are routed by the %d recorded in %s: partitions were added",
			e.cfg.Names.Intents, e.layout.Partitions, routing, e.cfg.Names.Meta))
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
	case !slices.Equal(in, ctl):
		e.refuseLayout(fmt.Sprintf("the group assigned intents partitions %v but control partitions %v: the topics no longer have equal partition counts", in, ctl))
	case len(in) > 0 && in[len(in)-1] >= e.layout.Partitions:
		e.refuseLayout(fmt.Sprintf("the group assigned partition %d, but keys are routed by %d partitions: partitions were added", in[len(in)-1], e.layout.Partitions))
	}
}

// refuseLayout stops the member deciding, for good. Safe for concurrent use.
func (e *Executor) refuseLayout(why string) {
	if e.layoutRefused.Swap(true) {
		return
	}
	e.m.LayoutMismatch.Set(1)
	e.cfg.Logger.Error("the topics' partitions no longer match the routing; this member decides nothing until an operator acts (docs/DESIGN.md, adding partitions)", "why", why)
}

// holdIfLayoutRefused pauses every fetch once the layout is refused, and
// reports whether it is: records polled in this iteration must then be
// rewound, not decided.
func (e *Executor) holdIfLayoutRefused() bool {
	if !e.layoutRefused.Load() {
		return false
	}
	e.sess.Client().PauseFetchTopics(e.cfg.Names.Intents, e.cfg.Names.Control)
	return true
}
