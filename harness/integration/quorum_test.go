package integration

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// quorumCalls is how many calls sit inside the slow irreversible tool
// when two nodes go down; quorumOutage how long the nodes stay down.
const (
	quorumCalls  = 20
	quorumOutage = 20 * time.Second
)

// Two of the cluster's three nodes are killed for 20 s (the KRaft quorum
// and every partition's in-sync replicas lost: nothing can be written)
// while 20 calls sit inside a slow irreversible tool, then started again.
// The tool answers every call during the outage, so the members know
// every answer, or know that a call never left: no key may be escalated,
// every key ends with what the tool did (succeeded under its one
// downstream key, or not_executed with no request), every intent of
// every key gets exactly one terminal answer and any pending before it,
// and every partition decides again within recoveryBound of the nodes'
// return.
func TestClusterQuorumLossWithCallsInFlight(t *testing.T) {
	needCluster(t)
	e := newEnv(t, 6)
	l := newLedger(t)
	reg := registry(t, l.toolsYAML(toolEntry("t.qblock", "irreversible", l.url("/block"), "40s", "    pending_ttl: 45s\n")))
	for i := 0; i < 2; i++ {
		txnID := fmt.Sprintf("%s-tx%d", e.group, i)
		e.startSupervised(reg, func(cfg *executorConfig) { cfg.TransactionalID = txnID })
	}
	rec := e.startReconciler(reg, "", func(cfg *reconciler.Config) { cfg.FactGrace = 0 }) // the production default
	res := e.collect(e.names.Results)
	waitAllOwned(t, e, 2*time.Minute)

	keys := make([]string, quorumCalls)
	intents := map[string][]string{} // key -> its intents' ids, in the order sent
	for i := range keys {
		keys[i] = fmt.Sprintf("q-%d-%s", i, randHex(3))
		id := e.send(wire.Intent{Tool: "t.qblock", Key: keys[i], Args: map[string]any{"n": i}})
		intents[keys[i]] = append(intents[keys[i]], id)
	}
	l.waitArrivals(t, quorumCalls, 2*time.Minute)
	for _, k := range keys { // a duplicate joins each running call
		intents[k] = append(intents[k], e.send(wire.Intent{Tool: "t.qblock", Key: k, Args: map[string]any{"n": keyIndex(keys, k)}}))
	}
	time.Sleep(2 * time.Second) // let the duplicates be decided (coalesced)

	down := quorumVictims(t, e)
	t.Logf("the %d calls are in their tool; killing nodes %v for %s", quorumCalls, down, quorumOutage)
	for _, n := range down {
		kafkaScript(t, "node", "kill", fmt.Sprint(n))
	}
	outageAt := time.Now()
	late := lateProducer(t)
	time.Sleep(quorumOutage / 4)
	l.releaseAll() // the tool answers every call while the cluster cannot write
	for _, k := range keys {
		intents[k] = append(intents[k], late.send(t, e, wire.Intent{Tool: "t.qblock", Key: k, Args: map[string]any{"n": keyIndex(keys, k)}}))
	}
	time.Sleep(time.Until(outageAt.Add(quorumOutage)))
	started := make(chan struct{})
	go func() {
		defer close(started)
		startNodes(t, down)
		t.Logf("nodes %v started again %s after the kill", down, time.Since(outageAt).Round(time.Second))
	}()
	t.Cleanup(func() { <-started; waitInSync(t, e.adm, 2*time.Minute) })

	recovered, sinceBack := everyPartitionDecides(t, e, res, outageAt, 5*time.Minute)
	t.Logf("every partition decided again within %s of taking writes again (%s after the kill)", recovered.Round(100*time.Millisecond), sinceBack.Round(100*time.Millisecond))
	late.wait(t)

	for _, k := range keys {
		for _, id := range intents[k] {
			res.waitResult(t, id, 3*time.Minute)
		}
	}
	time.Sleep(3 * time.Second) // an answer sent twice would be here by now
	checkQuorumOutcome(t, e, l, res, keys, intents)
	if n := counterSum(t, rec.rc.Metrics().Escalations); n != 0 {
		t.Errorf("%v keys escalated; every answer was known to a member", n)
	}
	if recovered > recoveryBound {
		t.Errorf("a partition decided again only %s after the nodes' return; the bound is %s", recovered, recoveryBound)
	}
}

// recoveryBound is the bound of docs/DESIGN.md ("Recovery after a quorum
// loss") for the test's members (inprocConfig: 10 s rebalance and
// transaction timeouts; deploy/kafka/start's 1 s abort cleanup interval),
// plus the probe's own resend interval (everyPartitionDecides): every
// partition decides again within it of taking writes again.
const recoveryBound = max(10*time.Second, 10*time.Second+time.Second) + 2*5*time.Second + 2*time.Second + 2*time.Second

func keyIndex(keys []string, k string) int { return slices.Index(keys, k) }

// waitAllOwned waits until an intent on every partition is answered: the
// members hold and have restored every partition.
func waitAllOwned(t *testing.T, e *env, within time.Duration) {
	t.Helper()
	res := e.collect(e.names.Results)
	_, _ = everyPartitionDecides(t, e, res, time.Now(), within)
}

// everyPartitionDecides sends a fast call to a key of every partition, a
// new one every 2 s until the partition answered one. It returns, for the
// slowest partition, how long its first answer took from the moment the
// cluster took the partition's first call (the end of the outage, for
// that partition), and from from.
func everyPartitionDecides(t *testing.T, e *env, res *collector, from time.Time, within time.Duration) (sinceWritable, sinceFrom time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var mu sync.Mutex
	var wg sync.WaitGroup
	missing := map[int32]bool{}
	for p := int32(0); p < e.partitions; p++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, f, ok := partitionDecides(e, res, p, from, deadline)
			mu.Lock()
			defer mu.Unlock()
			sinceWritable, sinceFrom = max(sinceWritable, w), max(sinceFrom, f)
			if !ok {
				missing[p] = true
			}
		}()
	}
	wg.Wait()
	if len(missing) > 0 {
		t.Fatalf("partitions that answered nothing within %s: %v", within, missing)
	}
	return sinceWritable, sinceFrom
}

// partitionDecides is everyPartitionDecides for partition p.
func partitionDecides(e *env, res *collector, p int32, from, deadline time.Time) (sinceWritable, sinceFrom time.Duration, ok bool) {
	var sent []string
	var writable, last time.Time
	for time.Now().Before(deadline) {
		if answeredOne(res, sent) {
			return time.Since(writable), time.Since(from), true
		}
		if time.Since(last) >= 2*time.Second {
			if id, ok := trySend(e, p); ok {
				if len(sent) == 0 {
					writable = time.Now()
				}
				sent, last = append(sent, id), time.Now()
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return 0, 0, false
}

func answeredOne(res *collector, ids []string) bool {
	for _, id := range ids {
		for _, r := range res.results(id) {
			if codes.Terminal(r.Status) {
				return true
			}
		}
	}
	return false
}

// trySend produces a t.ok call on a new key of partition p, giving up
// after 2 s (the cluster may not take writes yet).
func trySend(e *env, p int32) (string, bool) {
	for i := 0; ; i++ {
		k := fmt.Sprintf("probe-%d-%s", p, randHex(4))
		if wire.Partition(wire.RoutingKey(wire.DefaultTenant, k), e.partitions) != p {
			continue
		}
		in := wire.Intent{V: wire.Version, Type: wire.TypeCall, ID: "i-" + randHex(6), Tenant: wire.DefaultTenant, Key: k, Tool: "t.ok", Args: map[string]any{}}
		b, err := wire.EncodeIntent(&in)
		if err != nil {
			return "", false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		r := &kgo.Record{Topic: e.names.Intents, Partition: p, Key: []byte(in.RoutingKey()), Value: b}
		return in.ID, e.raw.ProduceSync(ctx, r).FirstErr() == nil
	}
}

// quorumVictims are the two nodes to kill: the group's coordinator (so
// that the members lose their session) and another.
func quorumVictims(t *testing.T, e *env) []int32 {
	t.Helper()
	groups := waitCoordinators(t, func(ctx context.Context) map[string]kadm.FindCoordinatorResponse {
		return e.adm.FindGroupCoordinators(ctx, e.group)
	})
	first := groups[e.group]
	second := first%3 + 1
	return []int32{first, second}
}

// startNodes starts the nodes at once (one alone has no quorum to
// register with) and waits for both.
func startNodes(t *testing.T, nodes []int32) {
	t.Helper()
	var wg sync.WaitGroup
	for _, n := range nodes {
		wg.Add(1)
		go func() { defer wg.Done(); kafkaScript(t, "node", "start", fmt.Sprint(n)) }()
	}
	wg.Wait()
}

// lateSender produces intents while the cluster cannot take them: each is
// retried until it lands (an agent's client waiting out an outage).
type lateSender struct {
	cl   *kgo.Client
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

func lateProducer(t *testing.T) *lateSender {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordDeliveryTimeout(3*time.Minute), kgo.ProduceRequestTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &lateSender{cl: cl}
}

func (s *lateSender) send(t *testing.T, e *env, in wire.Intent) string {
	t.Helper()
	in.V, in.Type, in.Tenant, in.ID = wire.Version, wire.TypeCall, wire.DefaultTenant, "i-"+randHex(6)
	b, err := wire.EncodeIntent(&in)
	if err != nil {
		t.Fatal(err)
	}
	rk := in.RoutingKey()
	s.wg.Add(1)
	s.cl.Produce(context.Background(), &kgo.Record{Topic: e.names.Intents, Partition: wire.Partition(rk, e.partitions), Key: []byte(rk), Value: b},
		func(_ *kgo.Record, err error) {
			defer s.wg.Done()
			if err != nil {
				s.mu.Lock()
				s.errs = append(s.errs, err)
				s.mu.Unlock()
			}
		})
	return in.ID
}

func (s *lateSender) wait(t *testing.T) {
	t.Helper()
	s.wg.Wait()
	if len(s.errs) > 0 {
		t.Fatalf("%d intents sent during the outage never landed: %v", len(s.errs), s.errs[0])
	}
}

// checkQuorumOutcome: one terminal answer per intent, pendings only
// before it (and at least one for the intents that waited on a call
// whose member lost its partition); each key settled as its tool saw it (succeeded with one
// request under its downstream key, or not_executed with none); one
// downstream key per key at most.
func checkQuorumOutcome(t *testing.T, e *env, l *ledger, res *collector, keys []string, intents map[string][]string) {
	t.Helper()
	statuses := map[string]int{}
	for _, k := range keys {
		for _, id := range intents[k] {
			checkAnswers(t, id, res.results(id))
		}
		var last *saga.Event
		started := 0
		for _, ev := range history(t, e, wire.DefaultTenant, k) {
			switch ev.Kind {
			case saga.EvStarted:
				started++
			case saga.EvOutcome, saga.EvResolved:
				if ev.Status != saga.StatusUnknown {
					last = ev
				}
			}
		}
		if started != 1 || last == nil {
			t.Errorf("%s: %d started events, settled by %+v", k, started, last)
			continue
		}
		statuses[last.Status.String()+" by "+or(last.By, "its member")]++
		if last.By == "executor" {
			// Its member lost the partition: the call's own intent and the
			// duplicate that joined it are told pending before the fact.
			for _, id := range intents[k][:2] {
				wantPendingThenTerminal(t, id, res.results(id))
			}
		}
		calls := l.requestsOf(wire.DefaultTenant, k)
		switch {
		case last.Status == saga.StatusSucceeded && calls != 1:
			t.Errorf("%s: succeeded, and the tool saw %d requests", k, calls)
		case last.Status == saga.StatusNotExecuted && calls != 0:
			t.Errorf("%s: not_executed, and the tool saw %d requests", k, calls)
		case last.Status != saga.StatusSucceeded && last.Status != saga.StatusNotExecuted:
			t.Errorf("%s: settled %s", k, last.Status)
		}
	}
	t.Logf("keys settled: %v", statuses)
}

func checkAnswers(t *testing.T, id string, answers []*wire.Result) {
	t.Helper()
	terminal := 0
	for _, r := range answers {
		if !codes.Terminal(r.Status) {
			if terminal > 0 {
				t.Errorf("intent %s: %s after its terminal answer", id, r.Status)
			}
			continue
		}
		terminal++
	}
	if terminal != 1 {
		t.Errorf("intent %s: %d terminal answers: %v", id, terminal, statusesOf(answers))
	}
}

func statusesOf(rs []*wire.Result) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Status)
	}
	return out
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// requestsOf counts the requests the tool saw for (tenant, key), under
// any downstream key.
func (l *ledger) requestsOf(tenant, key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for dk, h := range l.headers {
		if h.Get("X-Tool-Tenant") == tenant && h.Get("X-Tool-Key") == key {
			n += l.calls[dk]
		}
	}
	return n
}

// counterSum adds up every series of a counter vector.
func counterSum(t *testing.T, v *prometheus.CounterVec) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	go func() { v.Collect(ch); close(ch) }()
	n := 0.0
	for m := range ch {
		n += metricValue(t, m)
	}
	return n
}
