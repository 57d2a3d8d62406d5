package chaos

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/topics"
	"github.com/atmostonce/toolexec/wire"
)

// The verdict as a library, for the seeded simulation (harness/chaos/sim), which
// runs the product in its own process and judges it with the same checks
// as Run: the ledger, the answers, the event log, the hostile records.

// History is what the committed event log says of each key, folded as a
// reader of the events topic delivers it. Run scans the log once at the
// end; the simulation moves the log start during a run and so folds each
// event before the log may lose it. Safe for concurrent use.
type History struct {
	mu     sync.Mutex
	keys   map[string]*keyHistory // by routing key
	trails map[string][]string    // by routing key: the key's events, as Trail prints them
}

// NewHistory returns an empty History.
func NewHistory() *History {
	return &History{keys: map[string]*keyHistory{}, trails: map[string][]string{}}
}

// Fold adds one record of the events topic (read-committed). A round
// event is about its partition, not a key, and is skipped.
func (h *History) Fold(r *kgo.Record) error {
	ev, err := eventlog.Decode(r.Value)
	if err != nil {
		return fmt.Errorf("chaos: undecodable event at %s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
	}
	if ev.Kind == saga.EvRound {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	rk := string(r.Key)
	foldEvent(h.keys, rk, ev)
	if t := h.trails[rk]; len(t) < maxTrail {
		h.trails[rk] = append(t, fmt.Sprintf("%d@%d %s intent=%s call=%s status=%s by=%s at=%s producer=%d", r.Partition, r.Offset, ev.Kind, ev.IntentID, ev.CallID,
			ev.Status, ev.By, time.UnixMilli(ev.At).UTC().Format("15:04:05.000"), r.ProducerID))
	}
	return nil
}

// maxTrail bounds the events kept per key for Trail.
const maxTrail = 32

// Trail describes a key's calls as the log tells them, for a person
// diagnosing a violation: each call's intent id, downstream key and
// status, and its last status.
func (h *History) Trail(rk string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	k := h.keys[rk]
	if k == nil {
		return "no event"
	}
	return fmt.Sprintf("tool %s, last %s, calls %+v; events: %s", k.Tool, k.LastStatus, k.Calls, strings.Join(h.trails[rk], "; "))
}

// NewTracker returns a Tracker of intents whose answers come on the
// results topic (and on reply_to topics it is told to Follow).
func NewTracker(results string) *Tracker { return newTracker(results) }

// Add tracks an intent about to be produced.
func (t *Tracker) Add(in *wire.Intent) { t.add(in) }

// Produced records the outcome of an intent's produce (err nil: in the log).
func (t *Tracker) Produced(tenant, id string, err error) { t.produced(tenant, id, err) }

// Follow feeds every answer on topic to the tracker, from the topic's
// start, until ctx ends.
func (t *Tracker) Follow(ctx context.Context, brokers []string, topic string, opts ...kgo.Opt) error {
	return t.follow(ctx, brokers, topic, nil, opts...)
}

// OpenIntent names an intent without a terminal answer yet.
type OpenIntent struct{ Tenant, Key, ID string }

// Open returns every produced intent that has no terminal answer yet.
func (t *Tracker) Open() []OpenIntent {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []OpenIntent
	for _, r := range t.mu.intents {
		if r.Produced && len(r.Terminal) == 0 {
			out = append(out, OpenIntent{Tenant: r.Tenant, Key: r.Key, ID: r.ID})
		}
	}
	return out
}

// Strays returns the answers to intents the tracker never saw produced
// (the reconciler's commands) by status, and the reasons of those that
// carried an error.
func (t *Tracker) Strays() (byStatus, why map[string]int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return maps.Clone(t.mu.strays), maps.Clone(t.mu.strayWhy)
}

// Counts returns how many intents were tracked and how many answers read.
func (t *Tracker) Counts() (intents, answers int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.mu.intents), t.mu.answers
}

// NewHostile returns the sender of hostile waves (Start, Wait, Close),
// tracking what it sends in tr; opts go to every client it makes.
func NewHostile(brokers []string, names topics.Names, partitions int32, tr *Tracker, logf func(string, ...any), opts ...kgo.Opt) (*Hostile, error) {
	return newHostile(brokers, names, partitions, tr, logf, opts...)
}

// OnSent sets the function told the kind of every poison record sent.
// Call it before the first wave.
func (h *Hostile) OnSent(count func(kind string)) { h.count = count }

// Escalations remembers every call the reconciler ever listed escalated
// (a key escalated and settled later by a fact has left the list by the
// end of a run). Safe for concurrent use.
type Escalations struct{ w escalationWatch }

// Note records the reconciler's rows of this moment.
func (e *Escalations) Note(rows []reconciler.Row) {
	pr := make([]pendingRow, len(rows))
	for i, r := range rows {
		pr[i] = pendingRow{Tenant: r.Tenant, Key: r.Key, Tool: r.Tool, State: r.State, Status: r.Status, DownstreamKey: r.DownstreamKey}
	}
	e.w.note(pr)
}

// Facts are the calls a member delivered a fact about (a resolve by the
// executor naming the call's downstream key), with the fact's outcome.
type Facts map[callRef]string

// ReadFacts reads the control topic to its end for the members' facts.
func ReadFacts(ctx context.Context, brokers []string, names topics.Names, opts ...kgo.Opt) (Facts, error) {
	return readFacts(ctx, brokers, names, opts...)
}

// Evidence is everything the verdict is computed from.
type Evidence struct {
	Tracker   *Tracker
	Ledger    LedgerStats
	History   *History
	Escalated map[string]bool // routing keys the reconciler escalated
	// Undecided says whether an intent (tenant and id, "" when the
	// question is about a key) of a routing key lies on a partition the
	// run made undecidable on purpose (it landed there, or its key's
	// partition is one); nil: none. Their intents may stay unanswered and
	// their keys in doubt, and hostile records there need no dead letter.
	Undecided func(tenant, id, rk string) bool
	Stuck     []string // events partitions whose open transaction never ended
	Hostile   *Hostile // nil: no hostile waves
	// DeadLetters read after the run (ReadDeadLetters); needed with Hostile.
	DeadLetters DeadLetters
	Aborted     int // transactions the executors aborted
	Faults      int // faults injected
	// Escalations and Facts: an escalated call a member knew the answer
	// of is a violation; nil: not checked.
	Escalations *Escalations
	Facts       Facts
}

// DeadLetters are the dead letters of intents records, by where the
// record was.
type DeadLetters map[deadLetterAt]*wire.DeadLetter

// ReadDeadLetters reads the dead-letter topic to its stable end.
func ReadDeadLetters(ctx context.Context, brokers []string, names topics.Names) (DeadLetters, error) {
	return readDeadLetters(ctx, brokers, names)
}

// Judge computes the verdict with Run's checks. Pure, apart from copying
// what the tracker, the history and the hostile sender hold.
func Judge(ev Evidence) *Report {
	intents, answers, _ := ev.Tracker.snapshot()
	ev.History.mu.Lock()
	hist := make(map[string]*keyHistory, len(ev.History.keys))
	for rk, k := range ev.History.keys {
		c := *k
		hist[rk] = &c
	}
	ev.History.mu.Unlock()
	in := checkInput{intents: intents, ledger: ev.Ledger, hist: hist, escalated: ev.Escalated, undecided: ev.Undecided,
		stuck: ev.Stuck, deadLetters: ev.DeadLetters, aborted: ev.Aborted, faults: ev.Faults, facts: ev.Facts}
	if ev.Escalations != nil {
		in.escalatedCalls = ev.Escalations.w.calls()
		for c := range in.escalatedCalls {
			// A fact about a key of an undecidable partition cannot reach
			// an owner that refuses the partition.
			if ev.Undecided != nil && ev.Undecided("", "", c.RK) {
				delete(in.escalatedCalls, c)
			}
		}
	}
	if ev.Hostile != nil {
		for _, h := range ev.Hostile.Records() {
			if ev.Undecided == nil || !ev.Undecided("", "", wire.RoutingKey(h.Tenant, h.Key)) {
				in.hostile = append(in.hostile, h)
			}
		}
	}
	rep := &Report{Answers: answers}
	check(in, rep)
	return rep
}
