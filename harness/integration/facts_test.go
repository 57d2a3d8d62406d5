package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// A member's facts (executor/facts.go) on a private kfake cluster: the
// faults need its request control.

// A tick's transaction commits but its answer is lost (the broker dies
// between the two): the member does not make the tick's call, whose
// started event is committed. It keeps that the call was never sent and
// delivers it to the key's owner: the key is settled not_executed, the
// intent told pending first (no call runs for its key) and then its
// terminal answer, and the key is free for the agent's retry. The same
// fact delivered again after that retry started names the first attempt
// and is stale: it changes nothing.
func TestUnsentCallIsSettledByItsFact(t *testing.T) {
	u := newUnconfirmed(t, "uf", "")
	u.callOK(t, "uf-0") // the partition is restored and a first commit went through
	results := collectOn(t, u.seeds, u.names.Results)
	control := collectOn(t, u.seeds, u.names.Control)
	u.drop.arm()
	in := wire.Intent{ID: client.NewID(), Tool: "t.irrev", Key: "uf-1", Args: map[string]any{"n": 1}}
	go func() { _, _ = u.client.Call(u.ctx, in) }()
	res := results.waitResult(t, in.ID, 90*time.Second)
	if !u.drop.fired() {
		t.Fatal("no transaction commit was intercepted: the test did not exercise the fault")
	}
	if res.Status != codes.StatusNotExecuted || res.Error == nil || res.Error.Code != codes.ErrNotSent {
		t.Fatalf("the intent's answer: %+v", res)
	}
	wantPendingThenTerminal(t, in.ID, results.results(in.ID))
	if n := u.ledger.requestsOf(wire.DefaultTenant, "uf-1"); n != 0 {
		t.Fatalf("the tool saw %d requests for a call its member never sent", n)
	}
	rk := wire.RoutingKey(wire.DefaultTenant, "uf-1")
	evs := keyEvents(t, u.adm, u.seeds, u.names.Events, 1, rk)
	last := evs[len(evs)-1]
	if started(evs) != 1 || last.Kind != saga.EvResolved || last.By != "executor" || last.Status != saga.StatusNotExecuted {
		t.Fatalf("uf-1's events: %v, the last %+v", kinds(evs), last)
	}

	// The agent retries with the same key: a new attempt, which runs.
	block := wire.Intent{ID: client.NewID(), Tool: "t.irrev", Key: "uf-1", Args: map[string]any{"n": 1}}
	if r, err := u.client.Call(u.ctx, block); err != nil || r.Status != codes.StatusSucceeded {
		t.Fatalf("the retry: %+v %v", r, err)
	}
	// The first attempt's fact once more, as a courier would send it again
	// after a lost acknowledgement: it names the first attempt.
	var fact *kgo.Record
	for _, r := range control.records() {
		if string(r.Key) == rk {
			fact = r
		}
	}
	if fact == nil {
		t.Fatal("no fact of uf-1 on the control topic")
	}
	stale := u.ex.Metrics().Intents.WithLabelValues("stale")
	before := metricValue(t, stale)
	produceTo(t, u.seeds, &kgo.Record{Topic: u.names.Control, Partition: 0, Key: fact.Key, Value: fact.Value})
	waitFor(t, 30*time.Second, "the repeated fact decided stale", func() bool { return metricValue(t, stale) > before })
	evs = keyEvents(t, u.adm, u.seeds, u.names.Events, 1, rk)
	if last := evs[len(evs)-1]; last.Kind != saga.EvOutcome || last.Status != saga.StatusSucceeded {
		t.Fatalf("uf-1 after the repeated fact: %v, the last %+v", kinds(evs), last)
	}
	if n := u.ledger.requestsOf(wire.DefaultTenant, "uf-1"); n != 1 {
		t.Fatalf("the tool saw %d requests for uf-1, want 1 (the retry)", n)
	}
}

// A member loses its group session (the coordinator no longer knows it)
// while a call runs in an irreversible tool: its partition is released,
// and the tool answers afterwards. The member keeps the outcome and
// delivers it; the partition's next owner (here the member itself, in a
// new session) records it: the intent is told pending, then succeeded,
// with one request at the tool and no investigation.
func TestLostOutcomeReachesItsOwnerAsAFact(t *testing.T) {
	u := newUnconfirmed(t, "lf", "")
	u.callOK(t, "lf-0")
	results := collectOn(t, u.seeds, u.names.Results)
	in := wire.Intent{ID: client.NewID(), Tool: "t.block", Key: "lf-1", Args: map[string]any{"n": 1}}
	go func() { _, _ = u.client.Call(u.ctx, in) }()
	u.ledger.waitArrivals(t, 2, 60*time.Second) // lf-0, then lf-1 inside its tool
	fence := &sessionFence{cluster: u.cluster}
	u.cluster.ControlKey(int16(kmsg.Heartbeat), fence.control)
	waitFor(t, 60*time.Second, "the member back in the group under a new session (its partition released on the way)", func() bool {
		return fence.rejoined(u)
	})
	u.ledger.releaseAll()
	res := results.waitResult(t, in.ID, 90*time.Second)
	if res.Status != codes.StatusSucceeded {
		t.Fatalf("the intent's answer: %+v", res)
	}
	wantPendingThenTerminal(t, in.ID, results.results(in.ID))
	if n := u.ledger.requestsOf(wire.DefaultTenant, "lf-1"); n != 1 {
		t.Fatalf("the tool saw %d requests for lf-1, want 1", n)
	}
	evs := keyEvents(t, u.adm, u.seeds, u.names.Events, 1, wire.RoutingKey(wire.DefaultTenant, "lf-1"))
	if last := evs[len(evs)-1]; started(evs) != 1 || last.Kind != saga.EvResolved || last.By != "executor" || last.Status != saga.StatusSucceeded {
		t.Fatalf("lf-1's events: %v, the last %+v", kinds(evs), last)
	}
	if n := metricValue(t, u.ex.Metrics().Facts.Delivered); n != 1 {
		t.Fatalf("facts delivered: %v, want 1", n)
	}
}

// wantPendingThenTerminal: at least one pending answer, all of them
// before the one terminal answer.
func wantPendingThenTerminal(t *testing.T, id string, answers []*wire.Result) {
	t.Helper()
	checkAnswers(t, id, answers)
	if len(answers) < 2 || codes.Terminal(answers[0].Status) {
		t.Fatalf("intent %s's answers %v: want pending, then the terminal one", id, statusesOf(answers))
	}
}

func produceTo(t *testing.T, seeds []string, r *kgo.Record) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(t.Context(), r).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// sessionFence answers every heartbeat of the first member it sees with
// UNKNOWN_MEMBER_ID, as a coordinator that lost the member's session
// does: the member's partitions are lost at once, without a drain, and
// the coordinator expires the member when its session times out.
type sessionFence struct {
	cluster *kfake.Cluster

	mu     sync.Mutex
	member string
}

// rejoined reports whether the group's one member is a session other than
// the fenced one: the member lost its partitions and joined again.
func (f *sessionFence) rejoined(u *unconfirmed) bool {
	f.mu.Lock()
	fenced := f.member
	f.mu.Unlock()
	ctx, cancel := context.WithTimeout(u.ctx, 5*time.Second)
	defer cancel()
	gs, err := u.adm.DescribeGroups(ctx, u.cfg.Group)
	if err != nil || fenced == "" {
		return false
	}
	g := gs[u.cfg.Group]
	return g.State == "Stable" && len(g.Members) == 1 && g.Members[0].MemberID != fenced
}

func (f *sessionFence) control(req kmsg.Request) (kmsg.Response, error, bool) {
	f.cluster.KeepControl()
	hb := req.(*kmsg.HeartbeatRequest)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.member == "" {
		f.member = hb.MemberID
	}
	if hb.MemberID != f.member {
		return nil, nil, false
	}
	resp := hb.ResponseKind().(*kmsg.HeartbeatResponse)
	resp.ErrorCode = kerr.UnknownMemberID.Code
	return resp, nil, true
}
