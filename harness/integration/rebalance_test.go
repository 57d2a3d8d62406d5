package integration

import (
	"context"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// TestRebalanceWhileIdleDrainsFirst: a second member joins while the
// first waits in its poll, with one call running and one queued behind
// the tool's max_in_flight of 1. The first member must drain before it
// lets the revocation through: the queued call is recorded not_executed
// and never reaches the tool, and the running call, which finishes well
// within the drain timeout, has its outcome recorded and answered; no key
// is left in doubt. franz-go runs the revoke callback at once during a
// poll's wait unless the loop holds the rebalance gate there
// (executor/gate.go): no drain would run, the running call's outcome
// would be dropped and the queued call would reach the tool from a member
// that had released its partition.
func TestRebalanceWhileIdleDrainsFirst(t *testing.T) {
	u := newUnconfirmed(t, "idl", toolEntry("t.one", "irreversible", "/block", "40s", "    max_in_flight: 1\n    pending_ttl: 2m\n"))
	u.callOK(t, "idl-0") // the partition is restored
	results := collectOn(t, u.seeds, u.names.Results)
	running := wire.Intent{ID: client.NewID(), Tool: "t.one", Key: "idl-run", Args: map[string]any{"n": 1}}
	queued := wire.Intent{ID: client.NewID(), Tool: "t.one", Key: "idl-queued", Args: map[string]any{"n": 2}}
	go func() { _, _ = u.client.Call(u.ctx, running) }()
	u.ledger.waitArrivals(t, 2, 30*time.Second) // idl-0, then idl-run: it runs, and blocks
	go func() { _, _ = u.client.Call(u.ctx, queued) }()
	waitStarted(t, u, "idl-queued") // committed, waiting behind idl-run

	second := u.startMember(t)
	defer second()
	// The first member is either draining (the queued call is answered
	// not_executed) or has let the revocation through without a drain
	// (the group is stable again, with both members): only then does the
	// running call finish.
	deadline := time.Now().Add(30 * time.Second)
	for !terminal(results.results(queued.ID)) && !u.stable(2) {
		if time.Now().After(deadline) {
			t.Fatal("neither a drain nor a rebalance within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	u.ledger.releaseAll()

	if res := results.terminalWithin(running.ID, 30*time.Second); res == nil || res.Status != codes.StatusSucceeded {
		t.Errorf("the running call was answered %+v, want succeeded", res)
	}
	if res := results.terminalWithin(queued.ID, 10*time.Second); res == nil || res.Status != codes.StatusNotExecuted {
		t.Errorf("the queued call was answered %+v, want not_executed", res)
	}
	if got := u.ledger.callsOf(wire.DefaultTenant, "idl-queued"); got != 0 {
		t.Errorf("the queued call reached the tool %d times after its member released the partition", got)
	}
	for key, want := range map[string]saga.Status{"idl-run": saga.StatusSucceeded, "idl-queued": saga.StatusNotExecuted} {
		evs := keyEvents(t, u.adm, u.seeds, u.names.Events, 1, wire.RoutingKey(wire.DefaultTenant, key))
		if len(evs) != 2 || evs[0].Kind != saga.EvStarted || evs[1].Kind != saga.EvOutcome || evs[1].Status != want {
			t.Errorf("%s's events are %v, want started, then its outcome %v: a key left in doubt", key, kinds(evs), want)
		}
	}
}

// waitStarted waits until key's started event is committed.
func waitStarted(t *testing.T, u *unconfirmed, key string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		evs := keyEvents(t, u.adm, u.seeds, u.names.Events, 1, wire.RoutingKey(wire.DefaultTenant, key))
		if len(evs) > 0 && evs[0].Kind == saga.EvStarted {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s not started within 30s", key)
}

// terminal reports whether one of rs is a terminal answer.
func terminal(rs []*wire.Result) bool {
	for _, r := range rs {
		if codes.Terminal(r.Status) {
			return true
		}
	}
	return false
}

// startMember starts another member of u's group, with a data dir of its
// own; the returned func stops it (a shutdown: it drains) and closes it.
func (u *unconfirmed) startMember(t *testing.T) func() {
	t.Helper()
	cfg := u.cfg
	cfg.DataDir = t.TempDir()
	ex, err := executor.New(u.ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() { _ = ex.Run(ctx); close(ended) }()
	return func() { stop(); <-ended; ex.Close() }
}

// stable reports whether u's group is stable with n members.
func (u *unconfirmed) stable(n int) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	gs, err := u.adm.DescribeGroups(ctx, u.cfg.Group)
	if err != nil {
		return false
	}
	g := gs[u.cfg.Group]
	return g.State == "Stable" && len(g.Members) == n
}
