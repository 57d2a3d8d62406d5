package chaos

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// Escalations whose answer a member knew: a key escalated to a person
// while one of the executors held its call's outcome, or the certainty
// that it never sent the call (executor/facts.go). Every fact a member
// delivers is a resolve on the control topic naming the call's downstream
// key; every escalation the reconciler lists on /pending names it too.
// A call in both was escalated although a member knew its answer, at the
// time or later (a fact still on a member's disk when the reconciler
// escalated, or one the grace did not wait for): the checker requires
// none.

// callRef names one call (or compensation) of a key by its downstream key.
type callRef struct{ RK, DK string }

// escalationWatch remembers every call the reconciler ever listed as
// escalated: a key escalated and settled later by a fact has left the
// list by the end of the run.
type escalationWatch struct {
	mu   sync.Mutex
	seen map[callRef]bool
}

func (w *escalationWatch) note(rows []pendingRow) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[callRef]bool{}
	}
	for _, r := range rows {
		if r.State == "escalated" {
			w.seen[callRef{RK: wire.RoutingKey(r.Tenant, r.Key), DK: r.DownstreamKey}] = true
		}
	}
}

func (w *escalationWatch) calls() map[callRef]bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[callRef]bool, len(w.seen))
	for c := range w.seen {
		out[c] = true
	}
	return out
}

// watchEscalations polls /pending every escalationPoll until ctx ends.
func (rn *run) watchEscalations(ctx context.Context) {
	t := time.NewTicker(escalationPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if rows, err := rn.pendingRows(); err == nil {
			rn.escalations.note(rows)
		}
	}
}

// escalationPoll: an escalation a fact settles lists the key for at least
// a scan; polled this often, such a key is seen unless a fact follows its
// escalation within the poll.
const escalationPoll = time.Second

// readFacts reads the control topic to its end and returns the calls a
// member delivered a fact about: resolves by the executor that name a
// downstream key.
func readFacts(ctx context.Context, brokers []string, names topics.Names, opts ...kgo.Opt) (map[callRef]string, error) {
	out := map[callRef]string{}
	err := readToEnd(ctx, brokers, names.Control, func(r *kgo.Record) {
		in, rej := wire.DecodeIntent(r.Value, r.Key, wire.FromControl)
		if rej == nil && in.Type == wire.TypeResolve && in.By == "executor" && in.DownstreamKey != "" {
			out[callRef{RK: in.RoutingKey(), DK: in.DownstreamKey}] = in.Outcome
		}
	}, opts...)
	return out, err
}

// checkKnownEscalations counts the escalated calls a member delivered a
// fact about.
//
// Except a not_executed fact about a call the tool then received: its
// member never sent it, so the requests were the reconciler's, resending
// the call with its key once its pending_ttl had passed, and the owner
// refused the fact as too late for the same reason (saga/fact.go,
// resentTooLate: "never sent by its member" no longer means "never ran").
// The escalation is about the resend's outcome, which no member knew.
// Counted apart (EscalatedAfterResend), not excused silently.
func checkKnownEscalations(in checkInput, r *Report) {
	for c := range in.escalatedCalls {
		outcome, ok := in.facts[c]
		switch {
		case !ok:
		case outcome == saga.StatusNotExecuted.String() && in.ledger.Keys[c.DK].Calls > 0:
			r.EscalatedAfterResend++
		default:
			r.EscalatedKnown++
			r.violate("escalated_known_answer: %s: escalated while a member knew its call's answer (a fact about %s)", c.RK, c.DK)
		}
	}
}
