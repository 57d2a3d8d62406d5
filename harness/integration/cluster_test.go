package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/topicadmin"
	"github.com/atmostonce/toolexec/wire"
)

// The tests of this file run on the three-node cluster only (needCluster).

// deploy/kafka/leader and coordinator name the node Kafka itself names, so
// that a fault aimed with them hits what it means to.
func TestClusterScriptsAimAtTheRightNode(t *testing.T) {
	needCluster(t)
	e := newEnv(t, 3)
	for p := int32(0); p < 3; p++ {
		want := leaderOf(t, e.adm, e.names.Events, p)
		if got := scriptNode(t, kafkaScript(t, "leader", e.names.Events, fmt.Sprint(p))); got != want {
			t.Errorf("leader %s %d: the script says node %d, the metadata %d", e.names.Events, p, got, want)
		}
	}
	ids := []string{e.group, "tool-executor", "a", "chaos-ex-7", "Zz~ !x"}
	groups := waitCoordinators(t, func(ctx context.Context) map[string]kadm.FindCoordinatorResponse {
		return e.adm.FindGroupCoordinators(ctx, ids...)
	})
	txns := waitCoordinators(t, func(ctx context.Context) map[string]kadm.FindCoordinatorResponse {
		return e.adm.FindTxnCoordinators(ctx, ids...)
	})
	for _, id := range ids {
		if got := scriptNode(t, kafkaScript(t, "coordinator", "group", id)); got != groups[id] {
			t.Errorf("coordinator group %q: the script says node %d, Kafka %d", id, got, groups[id])
		}
		if got := scriptNode(t, kafkaScript(t, "coordinator", "transaction", id)); got != txns[id] {
			t.Errorf("coordinator transaction %q: the script says node %d, Kafka %d", id, got, txns[id])
		}
	}
}

// waitCoordinators asks until every id has a coordinator: the first ask
// on a fresh cluster creates the internal topic.
func waitCoordinators(t *testing.T, find func(context.Context) map[string]kadm.FindCoordinatorResponse) map[string]int32 {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		rs := find(ctx)
		cancel()
		out, missing := map[string]int32{}, ""
		for id, r := range rs {
			if r.Err != nil || r.NodeID < 0 {
				missing = fmt.Sprintf("%s: %v", id, r.Err)
			}
			out[id] = r.NodeID
		}
		if missing == "" && len(out) > 0 {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("no coordinator within a minute (%s)", missing)
		}
		time.Sleep(time.Second)
	}
}

// On a cluster, the executor and the reconciler refuse topics that could
// lose a committed transaction, naming the setting; the override starts
// and says so in a metric.
func TestClusterRefusesWeakDurability(t *testing.T) {
	needCluster(t)
	l := newLedger(t)
	reg := registry(t, l.toolsYAML(""))
	t.Run("replication_factor_1", func(t *testing.T) {
		e := weakEnv(t)
		if rf := replicationOf(t, e.adm, e.names.Events); rf[0] != 1 {
			t.Fatalf("the test's topics: replication %v", rf)
		}
		_, err := newExecutor(e.inprocConfig(reg))
		wantRefusal(t, "executor", err, e.names.Events+": replication factor 1, need at least 3", e.names.Events+": min.insync.replicas=1, need at least 2")
		_, err = newReconciler(e, reg)
		wantRefusal(t, "reconciler", err, e.names.Control+": replication factor 1, need at least 3")
	})
	t.Run("unclean_leader_election", func(t *testing.T) {
		e := newEnv(t, 2)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		rs, err := e.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "unclean.leader.election.enable", Value: kadm.StringPtr("true")}}, e.names.Events)
		if err == nil {
			_, err = rs.On(e.names.Events, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = newExecutor(e.inprocConfig(reg))
		wantRefusal(t, "executor", err, e.names.Events+": unclean.leader.election.enable=true, need false")
	})
	t.Run("override", func(t *testing.T) {
		e := weakEnv(t)
		cfg := e.inprocConfig(reg)
		preg := prometheus.NewRegistry()
		cfg.AllowWeakDurability, cfg.Registerer = true, preg
		ex, err := newExecutor(cfg)
		if err != nil {
			t.Fatalf("with the override: %v", err)
		}
		p := &inproc{running: runInTest(ex.Run, ex.Close), ex: ex, dir: cfg.DataDir}
		t.Cleanup(p.stop)
		m := ex.Metrics().Durability
		if v := metricValue(t, m.Override); v != 1 {
			t.Fatalf("toolexec_executor_durability_override %v", v)
		}
		if v := metricValue(t, m.Weak); v < 2 {
			t.Fatalf("toolexec_executor_durability_weak_settings %v, want the events topic's replication and min ISR at least", v)
		}
		if v := metricValue(t, m.ReplicationFactor.WithLabelValues(e.names.Events)); v != 1 {
			t.Fatalf("toolexec_executor_topic_replication_factor{topic=%q} %v", e.names.Events, v)
		}
		if res := e.call(e.client(), wire.Intent{Tool: "t.ok", Key: "weak-1", Args: map[string]any{}}, 60*time.Second); res.Status != codes.StatusSucceeded {
			t.Fatalf("a call with the override: %+v", res)
		}
	})
}

func newExecutor(cfg executor.Config) (*executor.Executor, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return executor.New(ctx, cfg)
}

func newReconciler(e *env, reg *tools.Registry) (*reconciler.Reconciler, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rc, err := reconciler.New(ctx, reconciler.Config{Brokers: brokers, Names: e.names, Group: e.group + "-rec", DataDir: e.t.TempDir(), Tools: reg, Logger: testLogger(e.t)})
	if err == nil {
		rc.Close()
	}
	return rc, err
}

func wantRefusal(t *testing.T, who string, err error, named ...string) {
	t.Helper()
	if !errors.Is(err, topicadmin.ErrWeakDurability) {
		t.Fatalf("%s started on weak topics: %v", who, err)
	}
	for _, s := range named {
		if !strings.Contains(err.Error(), s) {
			t.Fatalf("%s's refusal does not name %q: %v", who, s, err)
		}
	}
}

// The leader of the events partition a key routes to is killed (SIGKILL)
// while the key's call is inside its tool: the tool's effect happens once
// (one downstream key) and the intent gets one terminal answer, and a
// duplicate replays it.
//
// The key is chosen so that the killed node coordinates neither the
// member's group nor its transactional id. That does not make it the
// leader's fault alone: the node also holds replicas of the offsets and
// transaction logs, whose writes wait for it until the controller fences
// it, and the group may answer COORDINATOR_NOT_AVAILABLE meanwhile; kgo
// then reports the member's partitions lost and the call's outcome cannot
// be recorded. So the tool honours the downstream key (native_key) and a
// reconciler runs: the outcome is recorded by the member, or the key is in
// doubt and the reconciler's retry under the same downstream key records
// it. Either way: one effect, one answer. The outcome's EndTxn may also
// meet CONCURRENT_TRANSACTIONS until its context ends, which fails the
// client's producer id for good: the member then stops (ErrFatal) and,
// as its supervisor would in production, the test starts it again on the
// same data dir (startSupervised).
func TestClusterLeaderKilledDuringCall(t *testing.T) {
	needCluster(t)
	e := newEnv(t, 6)
	l := newLedger(t)
	reg := registry(t, l.toolsYAML(toolEntry("t.nblock", "native_key", l.url("/block"), "10s", "    pending_ttl: 15s\n")))
	txnID := e.group + "-tx"
	restarts := e.startSupervised(reg, func(cfg *executorConfig) { cfg.TransactionalID = txnID })
	e.startReconciler(reg, "", nil)
	res := e.collect(e.names.Results)
	in, p, leader := partitionLedApart(t, e, txnID)
	id := e.send(in)
	l.waitArrivals(t, 1, 60*time.Second)
	t.Logf("the call is in its tool; killing node %d, the leader of %s/%d (and of %s/%d: node %d)",
		leader, e.names.Events, p, e.names.Intents, p, leaderOf(t, e.adm, e.names.Intents, p))
	killNode(t, e.adm, leader)
	l.releaseAll()
	first := res.waitResult(t, id, 3*time.Minute)
	if first.Status != codes.StatusSucceeded {
		t.Fatalf("the answer: %+v", first)
	}
	if now := leaderOf(t, e.adm, e.names.Events, p); now == leader {
		t.Fatalf("node %d still leads %s/%d after its kill", leader, e.names.Events, p)
	}
	dup := e.call(e.client(), in, time.Minute)
	if !dup.WasReplay || dup.OriginalIntentID != id {
		t.Fatalf("a duplicate after the failover: %+v", dup)
	}
	time.Sleep(3 * time.Second) // an answer sent twice would be here by now
	terminal := 0
	for _, r := range res.results(id) {
		if codes.Terminal(r.Status) {
			terminal++
		}
	}
	if terminal != 1 {
		t.Fatalf("%d terminal answers to %s, want 1: %+v", terminal, id, res.results(id))
	}
	if keys := l.downstreamKeys(); len(keys) != 1 {
		t.Fatalf("the tool was called under %d downstream keys, want 1 (one effect): %v", len(keys), keys)
	}
	kinds := map[string]int{}
	for _, ev := range history(t, e, wire.DefaultTenant, in.Key) {
		kinds[ev.Kind.String()]++
	}
	t.Logf("the key's events: %v; tool requests: %d; member restarts: %d", kinds, l.total(), restarts())
	if kinds["started"] != 1 {
		t.Fatalf("the key's events: %v, want one started", kinds)
	}
}

// partitionLedApart picks a t.nblock call whose events partition is led by
// a node that coordinates neither e's group nor txnID, and returns it,
// its partition and that leader.
func partitionLedApart(t *testing.T, e *env, txnID string) (wire.Intent, int32, int32) {
	t.Helper()
	groups := waitCoordinators(t, func(ctx context.Context) map[string]kadm.FindCoordinatorResponse {
		return e.adm.FindGroupCoordinators(ctx, e.group)
	})
	txns := waitCoordinators(t, func(ctx context.Context) map[string]kadm.FindCoordinatorResponse {
		return e.adm.FindTxnCoordinators(ctx, txnID)
	})
	for i := 0; i < 100; i++ {
		in := wire.Intent{Tool: "t.nblock", Key: fmt.Sprintf("leader-kill-%d", i), Args: map[string]any{"amount": 5}}
		p := wire.Partition(wire.RoutingKey(wire.DefaultTenant, in.Key), e.partitions)
		if leader := leaderOf(t, e.adm, e.names.Events, p); leader != groups[e.group] && leader != txns[txnID] {
			return in, p, leader
		}
	}
	t.Fatalf("every events partition is led by the group coordinator (node %d) or the transaction coordinator (node %d)", groups[e.group], txns[txnID])
	return wire.Intent{}, 0, 0
}

// startSupervised runs a member in the test process the way its
// supervisor runs it in production: a member whose Run ends with ErrFatal
// is closed and started again on the same data dir and transactional id,
// until the test ends. restarts counts those starts.
func (e *env) startSupervised(reg *tools.Registry, mod func(*executorConfig)) (restarts func() int) {
	e.t.Helper()
	cfg := e.inprocConfig(reg)
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	start := func() (*executor.Executor, error) {
		sctx, scancel := context.WithTimeout(ctx, 60*time.Second)
		defer scancel()
		return executor.New(sctx, cfg)
	}
	ex, err := start()
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	var n atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			err := ex.Run(ctx)
			ex.Close()
			if ctx.Err() != nil || !errors.Is(err, executor.ErrFatal) {
				if ctx.Err() == nil {
					e.t.Logf("the member stopped for good: %v", err)
				}
				return
			}
			e.t.Logf("the member stopped (%v); its supervisor starts it again", err)
			n.Add(1)
			for ex, err = start(); err != nil; ex, err = start() {
				if ctx.Err() != nil {
					return
				}
				e.t.Logf("a restart failed (%v); trying again", err)
				time.Sleep(time.Second)
			}
		}
	}()
	e.t.Cleanup(func() { cancel(); <-done })
	return func() int { return int(n.Load()) }
}
