package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/eventlog"
	"github.com/atmostonce/toolexec/harness/chaos"
	"github.com/atmostonce/toolexec/internal/testing/kfakeresp"
	"github.com/atmostonce/toolexec/saga"
)

// tail follows the events topic read-committed from its start and folds
// every event into the run's History before the log start may move past
// it; it also notes, per partition, where it has read to and where the
// latest complete snapshot round began. Its client is the harness's.
type tail struct {
	hist *chaos.History
	logf func(string, ...any) // nil: quiet

	mu     sync.Mutex
	next   map[int32]int64 // offset after the last record read (markers included)
	rounds map[int32]int64 // the largest RoundFrom of a round event read; -1 none
	errs   int
}

func newTail(hist *chaos.History) *tail {
	return &tail{hist: hist, next: map[int32]int64{}, rounds: map[int32]int64{}}
}

// run follows until ctx ends; done is closed when it stopped.
func (t *tail) run(ctx context.Context, brokers []string, topic string, done chan<- struct{}) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID(harnessID+"-tail"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	if err != nil {
		return err
	}
	go func() {
		defer close(done)
		defer cl.Close()
		for {
			fs := cl.PollFetches(ctx)
			if ctx.Err() != nil || fs.IsClientClosed() {
				return
			}
			fs.EachRecord(t.record)
		}
	}()
	return nil
}

func (t *tail) record(r *kgo.Record) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// A reset (an out-of-range fetch, refused on purpose or after a move)
	// reads from the log start again: each offset is folded once.
	if r.Offset < t.next[r.Partition] {
		return
	}
	t.next[r.Partition] = r.Offset + 1
	if r.Attrs.IsControl() {
		return
	}
	if string(r.Key) == eventlog.RoundKey {
		if ev, err := eventlog.Decode(r.Value); err == nil && ev.Kind == saga.EvRound {
			if prev, ok := t.rounds[r.Partition]; !ok || ev.RoundFrom > prev {
				t.rounds[r.Partition] = ev.RoundFrom
			}
			if t.logf != nil {
				t.logf("round event at %s/%d@%d: the round began at %d", r.Topic, r.Partition, r.Offset, ev.RoundFrom)
			}
		}
		return
	}
	if err := t.hist.Fold(r); err != nil {
		t.errs++
	}
}

// position is where the tail has read to on p, and where the latest
// complete round it read began (-1: none).
func (t *tail) position(p int32) (next, round int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	round, ok := t.rounds[p]
	if !ok {
		round = -1
	}
	return t.next[p], round
}

// caughtUp waits until the tail has read every partition to end (its
// stable end, which the caller has waited for); false at the deadline.
func (t *tail) caughtUp(ctx context.Context, ends map[int32]int64, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		behind := 0
		for p, end := range ends {
			if next, _ := t.position(p); next < end {
				behind++
			}
		}
		if behind == 0 {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Moving the log start.
//
// The event log is deleted by time (retention) and an operator may move a
// partition's start with DeleteRecords. What the executor may rely on:
// every SnapshotInterval a member restates its whole view after a round
// start B and writes a round event naming B (docs/DESIGN.md, "Snapshot
// rounds"), and a restore whose checkpoint lies below the log start
// begins at the latest complete round that began at or after it
// ("Gaps"). So a move to x is legal when a complete round began at or
// after x (x <= B): what retention does once rounds run more often than
// the retention period, since a round restates every record before the
// events it replaces age out. A move past the latest round (x > B) takes
// events no round restates: no member whose view is behind x can know
// the keys they were about, and it must refuse to decide the partition
// (a GapError: paused, /readyz failing, an alert), never fold what is
// left as if it were whole. The simulation makes both moves; after a
// move past the rounds the partition's unanswered intents are counted as
// undecided, not lost, and a duplicate effect is still a violation.
//
// Every move stays at or below where the harness's tail has read, so the
// run's history never loses an event.

// mover moves the log start.
type mover struct {
	w   *world
	adm *kadm.Client // a faultable client: DeleteRecords is one of the request kinds

	mu   sync.Mutex
	past map[int32]bool // partitions moved past their latest round
	// victim is the one partition a run may move past its rounds (-1:
	// none chosen yet): its intents are excused from being answered, and
	// a run whose every partition were excused would check little.
	victim int32
}

func newMover(w *world, cl *kgo.Client) *mover {
	return &mover{w: w, adm: kadm.NewClient(cl), past: map[int32]bool{}, victim: -1}
}

// move moves partition p's start: legal (to at most the latest round's
// start) or past the rounds (always the run's first such partition). It
// returns what it did, for the fault count.
func (m *mover) move(ctx context.Context, rng *rand.Rand, p int32, pastRounds bool) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	topic := m.w.names.Events
	if pastRounds {
		m.mu.Lock()
		if m.victim < 0 {
			m.victim = p
		}
		p = m.victim
		m.mu.Unlock()
	}
	start, err := m.start(ctx, p)
	if err != nil {
		return "unreadable"
	}
	read, round := m.w.tail.position(p)
	lo, hi := start, min(round, read)
	if pastRounds {
		lo, hi = max(round, start), read
	}
	if hi <= lo {
		return "nothing_to_move"
	}
	to := lo + 1 + rng.Int64N(hi-lo)
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: p, At: to})
	_, err = m.adm.DeleteRecords(ctx, offs)
	now, serr := m.start(ctx, p)
	// A DeleteRecords whose answer was lost, or that timed out, may have
	// been applied (or still be): a move past the rounds that may have
	// happened counts as one.
	if pastRounds && (err != nil || serr != nil || now > max(round, -1) && now > start) {
		m.mu.Lock()
		m.past[p] = true
		m.mu.Unlock()
	}
	m.w.logf("log start of %s/%d: %d -> %d (asked %d; latest round from %d, tail at %d; err %v)", topic, p, start, now, to, round, read, err)
	switch {
	case serr != nil || now == start:
		return "not_moved"
	case now > round:
		return "past_rounds"
	}
	return "moved"
}

func (m *mover) start(ctx context.Context, p int32) (int64, error) {
	offs, err := m.w.harnessAdm.ListStartOffsets(ctx, m.w.names.Events)
	if err != nil {
		return 0, err
	}
	o, ok := offs.Lookup(m.w.names.Events, p)
	if !ok || o.Err != nil {
		return 0, fmt.Errorf("sim: start of %s/%d: %v", m.w.names.Events, p, o.Err)
	}
	return o.Offset, nil
}

// movedPast reports whether p's start was moved past its rounds.
func (m *mover) movedPast(p int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.past[p]
}

// eventsPartitions lists the events partitions a request is about (a
// fetch or a listing of offsets); nil for any other request.
func (w *world) eventsPartitions(r *kfakeresp.Request) []int32 {
	if r == nil {
		return nil
	}
	id := w.eventsID // read once at setup: this runs on a connection's reading goroutine
	var out []int32
	switch req := r.Req.(type) {
	case *kmsg.FetchRequest:
		for _, t := range req.Topics {
			if t.Topic == w.names.Events || t.TopicID == id {
				for _, p := range t.Partitions {
					out = append(out, p.Partition)
				}
			}
		}
	case *kmsg.ListOffsetsRequest:
		for _, t := range req.Topics {
			if t.Topic == w.names.Events {
				for _, p := range t.Partitions {
					out = append(out, p.Partition)
				}
			}
		}
	}
	return out
}

// readsLog reports whether a request reads an events partition; past:
// the one moved past its rounds, when the run has chosen it.
func (w *world) readsLog(r kfakeresp.Request, past bool) bool {
	ps := w.eventsPartitions(&r)
	if len(ps) == 0 || !past {
		return len(ps) > 0
	}
	v := w.mover.victimPartition()
	return v < 0 || slices.Contains(ps, v)
}

// victimPartition is the partition moved past its rounds; -1: none yet.
func (m *mover) victimPartition() int32 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.victim
}
