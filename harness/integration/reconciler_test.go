package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/console"
	"github.com/atmostonce/toolexec/internal/tokenfile"
	"github.com/atmostonce/toolexec/reconciler"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// effects is a real HTTP tool server that records every effect. Effects
// and requests are counted per logical key (the X-Tool-Tenant and
// X-Tool-Key headers), so that a second effect of a key shows whatever
// downstream key it came under; replays and the probe go by
// Idempotency-Key, as a real downstream's would. By default the first
// request of a downstream key performs the effect and then never answers
// (the executor's attempt times out): the crash window, made on purpose.
//
//	POST /native   honours the key like Stripe: a later request with the
//	               same key gets the stored answer, without a second effect
//	POST /plain    does not: every request is an effect
//	GET  /status   the probe: 200 {"status":"succeeded","result":...} for a
//	               key that had an effect, 404 otherwise; blocks while gated
//	POST /refund   the compensating tool: one compensation per request
type effects struct {
	srv  *httptest.Server
	lose atomic.Bool // the first request of a downstream key hangs after its effect

	mu       sync.Mutex
	effect   map[string]int             // tool path + logical key -> effects performed
	requests map[string]int             // tool path + logical key -> requests received
	dks      map[string]map[string]bool // tool path + logical key -> downstream keys it came under
	answer   map[string]any             // downstream key -> the answer of its first effect
	perDK    map[string]int             // tool path + downstream key -> effects
	probes   int
	gate     chan struct{} // probes wait while it is open (not nil, not closed)
	probed   chan string
}

func newEffects(t *testing.T) *effects {
	s := &effects{effect: map[string]int{}, answer: map[string]any{}, requests: map[string]int{}, dks: map[string]map[string]bool{},
		perDK: map[string]int{}, probed: make(chan string, 64)}
	s.lose.Store(true)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		s.openGate()
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

func (s *effects) serve(w http.ResponseWriter, r *http.Request) {
	dk := r.Header.Get("Idempotency-Key")
	if r.URL.Path == "/status" {
		s.probe(w, r)
		return
	}
	var args map[string]any
	_ = json.NewDecoder(r.Body).Decode(&args)
	logical := r.URL.Path + " " + r.Header.Get("X-Tool-Tenant") + "/" + r.Header.Get("X-Tool-Key")
	ans, first := s.act(r.URL.Path, logical, dk, args)
	if first && s.lose.Load() && r.URL.Path != "/refund" {
		<-r.Context().Done() // the effect happened; the answer never comes
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(ans)
}

// act performs (or, for /native with a known downstream key, replays) one
// effect.
func (s *effects) act(path, logical, dk string, args map[string]any) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests[logical]++
	if s.dks[logical] == nil {
		s.dks[logical] = map[string]bool{}
	}
	s.dks[logical][dk] = true
	if prev, ok := s.answer[dk]; ok && path == "/native" {
		return prev, false
	}
	s.effect[logical]++
	s.perDK[path+" "+dk]++
	n := s.perDK[path+" "+dk]
	ans := map[string]any{"effect_id": fmt.Sprintf("fx-%s-%d", dk[len(dk)-6:], n), "args": args}
	if path == "/refund" {
		ans = map[string]any{"refunded": true}
	}
	if _, ok := s.answer[dk]; !ok {
		s.answer[dk] = ans
	}
	return ans, n == 1
}

func (s *effects) probe(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	s.mu.Lock()
	s.probes++
	gate := s.gate
	s.mu.Unlock()
	select {
	case s.probed <- key:
	default:
	}
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	s.mu.Lock()
	ans, ok := s.answer[key]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "succeeded", "result": ans})
}

func (s *effects) closeGate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gate = make(chan struct{})
}

func (s *effects) openGate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gate != nil {
		select {
		case <-s.gate:
		default:
			close(s.gate)
		}
	}
}

// effectsOf is the number of effects tool path performed for (tenant,
// key), under any downstream key: the ledger that must show exactly one.
func (s *effects) effectsOf(path, tenant, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.effect[path+" "+tenant+"/"+key]
}

// totalEffects counts the effects of tool path over every key: a retry
// under another key would show here.
func (s *effects) totalEffects(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, v := range s.effect {
		if strings.HasPrefix(k, path+" ") {
			n += v
		}
	}
	return n
}

func (s *effects) requestsOf(path, tenant, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path+" "+tenant+"/"+key]
}

// downstreamKeys lists the downstream keys (tenant, key) reached tool path
// under, in no order.
func (s *effects) downstreamKeys(path, tenant, key string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for dk := range s.dks[path+" "+tenant+"/"+key] {
		out = append(out, dk)
	}
	return out
}

func (s *effects) probeCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.probes
}

// toolsYAML: a tool of every class that investigates, each with a short
// pending_ttl and an attempt timeout below it.
func (s *effects) toolsYAML() string {
	u := s.srv.URL
	entry := func(name, class, path, extra string) string {
		return fmt.Sprintf("  - name: %s\n    class: %s\n    url: %q\n    timeout: 1s\n    pending_ttl: 3s\n    retention: 1h\n    retries: 0\n%s",
			name, class, u+path, extra)
	}
	return "tools:\n" +
		entry("r.native", "native_key", "/native", "") +
		entry("r.probe", "probe", "/plain", fmt.Sprintf("    probe_url: %q\n", u+"/status")) +
		entry("r.comp", "compensatable", "/plain", "    compensate_with: r.refund\n") +
		entry("r.refund", "native_key", "/refund", "") +
		entry("r.irrev", "irreversible", "/plain", "") +
		entry("r.comp2", "compensatable", "/plain", "    compensate_with: r.gone\n") +
		strings.Replace(entry("r.slow", "irreversible", "/plain", ""), "pending_ttl: 3s", "pending_ttl: 5m", 1) +
		// Port 1 refuses every connection: each compensation by r.gone comes
		// back not_executed.
		fmt.Sprintf("  - name: r.gone\n    class: native_key\n    url: %q\n    timeout: 1s\n    pending_ttl: 3s\n    retention: 1h\n    retries: 0\n",
			"http://127.0.0.1:1/refund")
}

// recon is a reconciler running in the test process.
type recon struct {
	running
	rc  *reconciler.Reconciler
	reg *prometheus.Registry
	dir string
}

// testPolicy investigates quickly: the tests wait seconds, not minutes.
var testPolicy = reconciler.Policy{MaxAttempts: 5, BackoffBase: 300 * time.Millisecond, BackoffCap: 2 * time.Second, CommandTimeout: 20 * time.Second}

func (e *env) startReconciler(reg *tools.Registry, dir string, mod func(*reconciler.Config)) *recon {
	e.t.Helper()
	if dir == "" {
		dir = e.t.TempDir()
	}
	preg := prometheus.NewRegistry()
	cfg := reconciler.Config{
		Brokers: brokers, Names: e.names, Group: e.group + "-rec", DataDir: dir, Tools: reg, Policy: testPolicy,
		ScanInterval: 200 * time.Millisecond, SessionTimeout: 3 * time.Second, Registerer: preg,
		FactGrace: time.Second, // the tests that escalate have no member holding facts
		Logger:    testLogger(e.t),
	}
	if mod != nil {
		mod(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	rc, err := reconciler.New(ctx, cfg)
	cancel()
	if err != nil {
		e.t.Fatal(err)
	}
	r := &recon{running: runInTest(rc.Run, rc.Close), rc: rc, reg: preg, dir: dir}
	e.t.Cleanup(r.stop)
	return r
}

// crashed waits for Run to end after a fault hook and releases it.
func (r *recon) crashed(t *testing.T, within time.Duration) {
	t.Helper()
	select {
	case err := <-r.done:
		if !errors.Is(err, reconciler.ErrCrashed) {
			t.Fatalf("reconciler ended with %v, want ErrCrashed", err)
		}
	case <-time.After(within):
		t.Fatalf("the reconciler did not crash within %s", within)
	}
	r.rc.Close()
	r.cancel()
	r.cancel = nil
}

// send produces a call intent (as any agent would) and returns its id.
func (e *env) send(in wire.Intent) string {
	e.t.Helper()
	in.V, in.Type = wire.Version, wire.TypeCall
	if in.Tenant == "" {
		in.Tenant = wire.DefaultTenant
	}
	if in.ID == "" {
		in.ID = "i-" + randHex(6)
	}
	b, err := wire.EncodeIntent(&in)
	if err != nil {
		e.t.Fatal(err)
	}
	e.produceRaw(e.names.Intents, -1, in.RoutingKey(), b)
	return in.ID
}

// waitPending waits until intentID was answered pending: parked in doubt.
func waitPending(t *testing.T, c *collector, intentID string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for _, res := range c.results(intentID) {
			if !codes.Terminal(res.Status) {
				return
			}
			t.Fatalf("%s got a terminal answer, want pending first: %+v", intentID, res)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pending answer to %s within %s", intentID, within)
}

// inDoubtPair sends an intent and a duplicate and waits until both are
// parked: the key is in doubt and the duplicate waits for it.
func (e *env) inDoubtPair(res *collector, in wire.Intent) (first, dup string) {
	e.t.Helper()
	first = e.send(in)
	waitPending(e.t, res, first, 60*time.Second)
	dup = e.send(in)
	waitPending(e.t, res, dup, 30*time.Second)
	return first, dup
}

// commands decodes the commands on the control topic for (tenant, key).
func commands(c *collector, tenant, key string) []wire.Intent {
	var out []wire.Intent
	for _, r := range c.records() {
		var in wire.Intent
		if msgpack.Unmarshal(r.Value, &in) == nil && in.Tenant == tenant && in.Key == key {
			out = append(out, in)
		}
	}
	return out
}

func countType(cmds []wire.Intent, typ string) int {
	n := 0
	for _, c := range cmds {
		if c.Type == typ {
			n++
		}
	}
	return n
}

// settledBy finds the event that settled the key and checks its author.
func settledBy(t *testing.T, e *env, key string, kind saga.EventKind, by string) *saga.Event {
	t.Helper()
	for _, ev := range history(t, e, wire.DefaultTenant, key) {
		if ev.Kind == kind {
			if ev.By != by {
				t.Fatalf("%s of %s by %q, want %q (%+v)", kind, key, ev.By, by, ev)
			}
			return ev
		}
	}
	t.Fatalf("no %s event for %s", kind, key)
	return nil
}

// metricValue reads one gauge or counter.
func metricValue(t *testing.T, m prometheus.Metric) float64 {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	if d.Gauge != nil {
		return d.Gauge.GetValue()
	}
	return d.Counter.GetValue()
}

// native_key: the tool acted and its answer was lost. The reconciler
// retries with the same downstream key; the tool answers the first call's
// result without acting again; both waiting intents get it.
func TestReconcileNativeKeyRetriesWithSameKey(t *testing.T) {
	e := newEnv(t, 2)
	fx := newEffects(t)
	reg := registry(t, fx.toolsYAML())
	e.startInproc(reg, nil)
	res := e.collect(e.names.Results)
	in := wire.Intent{Tool: "r.native", Key: "nk-1", Args: map[string]any{"amount": 7}}
	first, dup := e.inDoubtPair(res, in)

	r := e.startReconciler(reg, "", nil)
	a, b := res.waitResult(t, first, 60*time.Second), res.waitResult(t, dup, 30*time.Second)
	for _, x := range []*wire.Result{a, b} {
		if x.Status != codes.StatusSucceeded || x.OriginalIntentID != first {
			t.Fatalf("answer %+v", x)
		}
	}
	if a.WasReplay || !b.WasReplay || fmt.Sprint(a.Result) != fmt.Sprint(b.Result) || !strings.Contains(fmt.Sprint(a.Result), "fx-") {
		t.Fatalf("answers differ or were not the tool's: %+v / %+v", a, b)
	}
	if n, all := fx.effectsOf("/native", "default", "nk-1"), fx.totalEffects("/native"); n != 1 || all != 1 {
		t.Fatalf("effects %d (%d under any key), want exactly 1", n, all)
	}
	if n, dks := fx.requestsOf("/native", "default", "nk-1"), fx.downstreamKeys("/native", "default", "nk-1"); n != 2 || len(dks) != 1 {
		t.Fatalf("requests %d under downstream keys %v, want 2 under one: the call and the reconciler's retry with the same key", n, dks)
	}
	settledBy(t, e, "nk-1", saga.EvResolved, "reconciler")
	m := r.rc.Metrics()
	if v := metricValue(t, m.Investigations.WithLabelValues("r.native", "native_key", "succeeded")); v != 1 {
		t.Fatalf("investigations succeeded = %v", v)
	}
	if v := metricValue(t, m.CommandsSent.WithLabelValues(wire.TypeResolve)); v != 1 {
		t.Fatalf("resolve commands sent = %v", v)
	}
}

// probe: the executor is killed after the tool acted and before the outcome
// is recorded. The next owner parks the key; the reconciler's probe finds
// the effect and settles it as succeeded with the tool's result.
func TestReconcileProbeFindsTheEffect(t *testing.T) {
	e := newEnv(t, 2)
	fx := newEffects(t)
	yaml := fx.toolsYAML()
	reg := registry(t, yaml)
	res := e.collect(e.names.Results)
	a := e.startProc(yaml, "", "TOOLEXEC_FAULT=after_call:exit:pr-1")
	in := wire.Intent{Tool: "r.probe", Key: "pr-1", Args: map[string]any{"deploy": "api"}}
	first := e.send(in)
	a.exited(t, 60*time.Second)
	if n := fx.effectsOf("/plain", "default", "pr-1"); n != 1 {
		t.Fatalf("effects before the crash %d, want 1", n)
	}
	e.startProc(yaml, "")
	dup := e.send(in)
	waitPending(t, res, dup, 60*time.Second)

	e.startReconciler(reg, "", nil)
	for _, id := range []string{first, dup} {
		got := res.waitResult(t, id, 60*time.Second)
		if got.Status != codes.StatusSucceeded || !strings.Contains(fmt.Sprint(got.Result), "fx-") {
			t.Fatalf("answer to %s: %+v", id, got)
		}
	}
	if n := fx.effectsOf("/plain", "default", "pr-1"); n != 1 {
		t.Fatalf("effects %d, want exactly 1", n)
	}
	ev := settledBy(t, e, "pr-1", saga.EvResolved, "reconciler")
	if ev.Status != saga.StatusSucceeded || ev.CallID != first {
		t.Fatalf("resolved event %+v", ev)
	}
}

// probe, never reached: the executor dies after committing started and
// before calling. The probe answers 404, the key is settled not_executed,
// and a later intent with the same key runs and says so.
func TestReconcileProbeNotExecuted(t *testing.T) {
	e := newEnv(t, 2)
	fx := newEffects(t)
	yaml := fx.toolsYAML()
	reg := registry(t, yaml)
	res := e.collect(e.names.Results)
	a := e.startProc(yaml, "", "TOOLEXEC_FAULT=after_started_commit:exit:pn-1")
	in := wire.Intent{Tool: "r.probe", Key: "pn-1", Args: map[string]any{"deploy": "web"}}
	first := e.send(in)
	a.exited(t, 60*time.Second)
	e.startProc(yaml, "")
	dup := e.send(in)
	waitPending(t, res, dup, 60*time.Second)

	e.startReconciler(reg, "", nil)
	waitAnswers(t, res, codes.StatusNotExecuted, first, dup)
	if fx.probeCount() == 0 || fx.requestsOf("/plain", "default", "pn-1") != 0 {
		t.Fatalf("probes %d, tool requests %d: want the probe asked and the tool never reached", fx.probeCount(), fx.requestsOf("/plain", "default", "pn-1"))
	}
	fx.lose.Store(false)
	again := res.waitResult(t, e.send(in), 60*time.Second)
	if again.Status != codes.StatusSucceeded || again.PreviousStatus != codes.StatusNotExecuted || again.Attempt != 2 {
		t.Fatalf("the next intent: %+v", again)
	}
	if n := fx.effectsOf("/plain", "default", "pn-1"); n != 1 {
		t.Fatalf("effects %d, want exactly 1", n)
	}
}

// A key settled not_executed and called again acts under a new downstream
// key, and its answer is lost: the reconciler must probe that call, under
// its key, and find the effect. Under the key of the first call (which
// never reached the tool) the probe answers 404, and the reconciler
// settled the second call not_executed although it acted, freeing the key
// for a second effect ("the downstream key is reused").
func TestReconcileProbeAfterNotExecutedAsksTheNewCall(t *testing.T) {
	e := newEnv(t, 2)
	fx := newEffects(t)
	yaml := fx.toolsYAML()
	reg := registry(t, yaml)
	res := e.collect(e.names.Results)
	a := e.startProc(yaml, "", "TOOLEXEC_FAULT=after_started_commit:exit:pg-1")
	in := wire.Intent{Tool: "r.probe", Key: "pg-1", Args: map[string]any{"deploy": "db"}}
	first := e.send(in)
	a.exited(t, 60*time.Second)
	e.startProc(yaml, "")
	e.startReconciler(reg, "", nil)
	waitAnswers(t, res, codes.StatusNotExecuted, first)

	second := e.send(in) // lose is on: it acts, and its answer never comes
	got := res.waitResult(t, second, 60*time.Second)
	if got.Status != codes.StatusSucceeded || !strings.Contains(fmt.Sprint(got.Result), "fx-") {
		t.Fatalf("the second call acted and was answered %+v, want succeeded with the tool's result", got)
	}
	if n, dks := fx.effectsOf("/plain", "default", "pg-1"), fx.downstreamKeys("/plain", "default", "pg-1"); n != 1 || len(dks) != 1 {
		t.Fatalf("effects %d under downstream keys %v, want exactly 1", n, dks)
	}
	ev := settledBy(t, e, "pg-1", saga.EvResolved, "reconciler")
	if ev.CallID != first {
		t.Fatalf("the first resolve is for %s, want %s", ev.CallID, first)
	}
}

// compensatable: the reconciler cannot learn whether the call acted, so it
// asks the executor to compensate; the compensation runs once, under the
// compensating tool's own key, and every waiting intent is answered.
func TestReconcileCompensatableCompensatesOnce(t *testing.T) {
	e := newEnv(t, 2)
	fx := newEffects(t)
	reg := registry(t, fx.toolsYAML())
	e.startInproc(reg, nil)
	res := e.collect(e.names.Results)
	ctl := e.collect(e.names.Control)
	in := wire.Intent{Tool: "r.comp", Key: "cp-1", Args: map[string]any{"amount": 12}}
	first, dup := e.inDoubtPair(res, in)

	e.startReconciler(reg, "", nil)
	waitAnswers(t, res, codes.StatusCompensated, first, dup)
	if n := fx.effectsOf("/plain", "default", "cp-1"); n != 1 {
		t.Fatalf("effects %d, want exactly 1", n)
	}
	if n, all := fx.effectsOf("/refund", "default", "cp-1"), fx.totalEffects("/refund"); n != 1 || all != 1 {
		t.Fatalf("compensations %d (%d under any key), want exactly 1", n, all)
	}
	ev := settledBy(t, e, "cp-1", saga.EvCompensationStarted, "reconciler")
	if cmds := commands(ctl, "default", "cp-1"); countType(cmds, wire.TypeCompensate) != 1 || cmds[0].CallID != first || cmds[0].ID != ev.IntentID {
		t.Fatalf("compensate commands %+v, want one for call %s", cmds, first)
	}
}

// compensatable, with a compensating tool that refuses every connection:
// each compensation comes back not_executed and the call is in doubt
// again. The reconciler counts those rounds and escalates the key after
// MaxAttempts instead of compensating again for ever.
func TestReconcileCompensationNeverReachingItsToolEscalates(t *testing.T) {
	e := newEnv(t, 2)
	fx := newEffects(t)
	reg := registry(t, fx.toolsYAML())
	e.startInproc(reg, nil)
	res := e.collect(e.names.Results)
	ctl := e.collect(e.names.Control)
	in := wire.Intent{Tool: "r.comp2", Key: "cg-1", Args: map[string]any{"amount": 4}}
	first, dup := e.inDoubtPair(res, in)

	r := e.startReconciler(reg, "", nil)
	m := r.rc.Metrics()
	waitFor(t, 90*time.Second, "the escalation", func() bool { return metricValue(t, m.Escalated.WithLabelValues("r.comp2")) == 1 })
	time.Sleep(2 * time.Second) // a compensate after the escalation would be on the topic by now
	cmds := commands(ctl, "default", "cg-1")
	ids := map[string]bool{}
	for _, c := range cmds {
		ids[c.ID] = true
	}
	if n := countType(cmds, wire.TypeCompensate); n != testPolicy.MaxAttempts || len(ids) != testPolicy.MaxAttempts {
		t.Fatalf("%d compensate commands (%d ids), want one per round: %d", n, len(ids), testPolicy.MaxAttempts)
	}
	for _, id := range []string{first, dup} {
		for _, got := range res.results(id) {
			if codes.Terminal(got.Status) {
				t.Fatalf("%s was answered %s (%+v) while its key is escalated", id, got.Status, got.Error)
			}
		}
	}
	if n := fx.effectsOf("/plain", "default", "cg-1"); n != 1 {
		t.Fatalf("effects %d, want exactly 1", n)
	}
}

// irreversible: nothing can be asked; the key is escalated (metric, pending
// list) and stays parked until an operator resolves it with the CLI; then
// every waiting intent gets the operator's answer.
func TestReconcileIrreversibleEscalatesUntilResolved(t *testing.T) {
	e := newEnv(t, 2)
	fx := newEffects(t)
	yaml := fx.toolsYAML()
	reg := registry(t, yaml)
	e.startInproc(reg, nil)
	res := e.collect(e.names.Results)
	in := wire.Intent{Tool: "r.irrev", Key: "ir-1", Args: map[string]any{"page": "oncall"}}
	first, dup := e.inDoubtPair(res, in)

	r := e.startReconciler(reg, "", nil)
	m := r.rc.Metrics()
	waitFor(t, 60*time.Second, "the escalation", func() bool { return metricValue(t, m.Escalated.WithLabelValues("r.irrev")) == 1 })
	if v := metricValue(t, m.Escalations.WithLabelValues("r.irrev", "irreversible")); v != 1 {
		t.Fatalf("escalations_total = %v", v)
	}
	api := httptest.NewServer(operatorsMux(t, e, r, reg))
	defer api.Close()
	toolsFile := writeTools(t, yaml)
	out := runReconcilerCLI(t, "pending", "--json", "--brokers", seedList(), "--topic-prefix", e.prefix,
		"--tools", toolsFile, "--http-addr", strings.TrimPrefix(api.URL, "http://"), "--operator-token-file", operatorTokenFile(t))
	var rows []reconciler.Row
	if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 1 {
		t.Fatalf("pending --json: %v\n%s", err, out)
	}
	if w := rows[0]; w.Key != "ir-1" || w.State != "escalated" || !w.Investigated || w.Class != "irreversible" || w.Waiters != 1 || w.CallID != first {
		t.Fatalf("pending row %+v", w)
	}
	if got := res.results(dup); len(got) != 1 || got[0].Status != codes.StatusPending {
		t.Fatalf("the duplicate was answered %+v while escalated", got)
	}

	runReconcilerCLI(t, "resolve", "--brokers", seedList(), "--topic-prefix", e.prefix, "--key", "ir-1",
		"--outcome", "succeeded", "--result", `{"paged":"alice"}`, "--by", "alice", "--reason", "checked the pager")
	for _, id := range []string{first, dup} {
		got := res.waitResult(t, id, 30*time.Second)
		if got.Status != codes.StatusSucceeded || fmt.Sprint(got.Result) != "map[paged:alice]" {
			t.Fatalf("answer to %s: %+v", id, got)
		}
	}
	settledBy(t, e, "ir-1", saga.EvResolved, "alice")
	waitFor(t, 30*time.Second, "the escalated gauge to drop", func() bool { return metricValue(t, m.Escalated.WithLabelValues("r.irrev")) == 0 })
	if n := fx.effectsOf("/plain", "default", "ir-1"); n != 1 {
		t.Fatalf("effects %d, want exactly 1", n)
	}
}

// An operator's resolve before the call's pending_ttl passed is refused
// (the call may still reach its tool), and the CLI says so and names
// --force; with --force the key is settled, and the event log records
// that it was forced.
func TestReconcilerResolveBeforePendingTTLNeedsForce(t *testing.T) {
	e := newEnv(t, 2)
	fx := newEffects(t)
	reg := registry(t, fx.toolsYAML())
	e.startInproc(reg, nil)
	res := e.collect(e.names.Results)
	first := e.send(wire.Intent{Tool: "r.slow", Key: "rf-1", Args: map[string]any{"n": 1}})
	waitPending(t, res, first, 60*time.Second)

	args := []string{"resolve", "--brokers", seedList(), "--topic-prefix", e.prefix, "--key", "rf-1",
		"--outcome", "succeeded", "--result", `{"checked":true}`, "--by", "alice", "--reason", "seen in the tool's log"}
	out, stderr, err := runReconcilerCLIStatus(t, args...)
	if err == nil || !strings.Contains(stderr, "--force") || !strings.Contains(stderr, "pending_ttl") || !strings.Contains(string(out), `"rejected"`) {
		t.Fatalf("a resolve within the pending_ttl: err %v\nstdout %s\nstderr %s", err, out, stderr)
	}
	if got := res.results(first); len(got) != 1 || got[0].Status != codes.StatusPending {
		t.Fatalf("the refused resolve answered the call: %+v", got)
	}
	runReconcilerCLI(t, append(args, "--force")...)
	if got := res.waitResult(t, first, 30*time.Second); got.Status != codes.StatusSucceeded || fmt.Sprint(got.Result) != "map[checked:true]" {
		t.Fatalf("answer after the forced resolve: %+v", got)
	}
	if ev := settledBy(t, e, "rf-1", saga.EvResolved, "alice"); !ev.Forced {
		t.Fatalf("the resolve event does not say it was forced: %+v", ev)
	}
}

// A reconciler killed (kill -9) while its probe is blocked, and restarted
// on the same data directory, probes again and settles the key once: no
// second effect, one resolve.
func TestReconcilerKilledDuringProbe(t *testing.T) {
	e := newEnv(t, 2)
	fx := newEffects(t)
	yaml := fx.toolsYAML()
	reg := registry(t, yaml)
	e.startInproc(reg, nil)
	res := e.collect(e.names.Results)
	ctl := e.collect(e.names.Control)
	in := wire.Intent{Tool: "r.probe", Key: "kp-1", Args: map[string]any{"n": 1}}
	first, dup := e.inDoubtPair(res, in)

	fx.closeGate()
	dir := t.TempDir()
	a := e.startReconcilerProc(yaml, dir)
	waitProbe(t, fx, 60*time.Second)
	a.signal(syscall.SIGKILL)
	a.exited(t, 10*time.Second)
	if n := len(commands(ctl, "default", "kp-1")); n != 0 {
		t.Fatalf("%d commands before the probe answered", n)
	}
	e.startReconcilerProc(yaml, dir)
	waitProbe(t, fx, 60*time.Second)
	fx.openGate()
	waitAnswers(t, res, codes.StatusSucceeded, first, dup)
	time.Sleep(time.Second) // a second resolve would be produced by now
	if n := countType(commands(ctl, "default", "kp-1"), wire.TypeResolve); n != 1 {
		t.Fatalf("%d resolve commands, want 1", n)
	}
	if n := fx.effectsOf("/plain", "default", "kp-1"); n != 1 {
		t.Fatalf("effects %d, want exactly 1", n)
	}
	_ = reg
}

// A reconciler that crashes right after it sent (or only recorded) a
// compensate, with no executor running to apply it, and restarts on the
// same data directory: the control topic holds exactly one compensate
// (the same command id either way), and the executor compensates once.
func TestReconcilerCrashAroundCompensate(t *testing.T) {
	cases := []struct {
		point   reconciler.Point
		timeout time.Duration // the command timeout: how soon an unseen command is sent again
		before  int           // compensate commands on the topic right after the crash
	}{
		{point: reconciler.PointCommandSent, timeout: time.Minute, before: 1},
		{point: reconciler.PointCommandRecorded, timeout: 2 * time.Second, before: 0},
	}
	for _, c := range cases {
		t.Run(string(c.point), func(t *testing.T) {
			e := newEnv(t, 2)
			fx := newEffects(t)
			reg := registry(t, fx.toolsYAML())
			ex := e.startInproc(reg, nil)
			res := e.collect(e.names.Results)
			ctl := e.collect(e.names.Control)
			in := wire.Intent{Tool: "r.comp", Key: "cc-1", Args: map[string]any{"amount": 3}}
			first, dup := e.inDoubtPair(res, in)
			ex.stop() // nobody applies the command while the reconciler crashes

			dir := t.TempDir()
			policy := func(cfg *reconciler.Config) { cfg.Policy.CommandTimeout = c.timeout }
			r := e.startReconciler(reg, dir, func(cfg *reconciler.Config) {
				policy(cfg)
				cfg.Hooks.At = func(p reconciler.Point, rk string) error {
					if p == c.point && strings.HasSuffix(rk, "/cc-1") {
						return errors.New("crash at " + string(p))
					}
					return nil
				}
			})
			r.crashed(t, 60*time.Second)
			time.Sleep(time.Second)
			if n := countType(commands(ctl, "default", "cc-1"), wire.TypeCompensate); n != c.before {
				t.Fatalf("%d compensate commands after the crash, want %d", n, c.before)
			}
			e.startReconciler(reg, dir, policy)
			waitFor(t, 30*time.Second, "one compensate command", func() bool {
				return countType(commands(ctl, "default", "cc-1"), wire.TypeCompensate) >= 1
			})
			if c.point == reconciler.PointCommandSent {
				// Within the command timeout the restart remembers the
				// command it sent: many scans, and no second one.
				time.Sleep(3 * time.Second)
				if cmds := commands(ctl, "default", "cc-1"); countType(cmds, wire.TypeCompensate) != 1 {
					t.Fatalf("compensate commands %+v, want exactly 1", cmds)
				}
			}
			e.startInproc(reg, nil)
			waitAnswers(t, res, codes.StatusCompensated, first, dup)
			// A command the crash left unsent is sent after the command
			// timeout, and again after each further timeout while no
			// executor applies it: always the one recorded id, which the
			// executor's saga treats as one compensation.
			ev := settledBy(t, e, "cc-1", saga.EvCompensationStarted, "reconciler")
			for _, cmd := range commands(ctl, "default", "cc-1") {
				if cmd.Type != wire.TypeCompensate || cmd.ID != ev.IntentID || cmd.CallID != first {
					t.Fatalf("command %+v; the compensation was started by %s for call %s", cmd, ev.IntentID, first)
				}
			}
			if n := fx.effectsOf("/refund", "default", "cc-1"); n != 1 {
				t.Fatalf("compensations %d, want exactly 1", n)
			}
			if n := fx.effectsOf("/plain", "default", "cc-1"); n != 1 {
				t.Fatalf("effects %d, want exactly 1", n)
			}
		})
	}
}

// waitAnswers waits up to 60 s for the answer to each intent and checks
// its status: every intent waiting on a settled key gets the settlement.
func waitAnswers(t *testing.T, res *collector, status string, ids ...string) {
	t.Helper()
	for _, id := range ids {
		if got := res.waitResult(t, id, 60*time.Second); got.Status != status {
			t.Fatalf("answer to %s: %+v", id, got)
		}
	}
}

func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func waitProbe(t *testing.T, fx *effects, within time.Duration) {
	t.Helper()
	select {
	case <-fx.probed:
	case <-time.After(within):
		t.Fatalf("no probe within %s", within)
	}
}

var (
	reconcilerBinOnce sync.Once
	reconcilerBin     string
	reconcilerBinErr  error
)

// reconcilerBinary builds cmd/reconciler once, next to the executor binary.
func reconcilerBinary(t *testing.T) string {
	t.Helper()
	reconcilerBinOnce.Do(func() {
		reconcilerBin = filepath.Join(filepath.Dir(binary), "reconciler")
		if out, err := exec.Command("go", "build", "-o", reconcilerBin, "../../cmd/reconciler").CombinedOutput(); err != nil {
			reconcilerBinErr = fmt.Errorf("build reconciler: %v\n%s", err, out)
		}
	})
	if reconcilerBinErr != nil {
		t.Fatal(reconcilerBinErr)
	}
	return reconcilerBin
}

// runReconcilerCLI runs an operator subcommand and returns its stdout.
func runReconcilerCLI(t *testing.T, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, reconcilerBinary(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reconciler %s: %v\n%s\n%s", args[0], err, out, stderr.String())
	}
	return out
}

// runReconcilerCLIStatus runs an operator subcommand that may fail.
func runReconcilerCLIStatus(t *testing.T, args ...string) ([]byte, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, reconcilerBinary(t), args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return out, stderr.String(), err
}

// startReconcilerProc runs the reconciler binary on dataDir, with extra
// flags.
func (e *env) startReconcilerProc(toolsYAML, dataDir string, extra ...string) *proc {
	e.t.Helper()
	toolsFile := writeTools(e.t, toolsYAML)
	addr := freeAddr(e.t)
	cmd := exec.Command(reconcilerBinary(e.t), "--brokers", seedList(), "--tools", toolsFile, "--data-dir", dataDir,
		"--http-addr", addr, "--topic-prefix", e.prefix, "--group", e.group+"-rec", "--session-timeout", "3s",
		"--scan-interval", "200ms", "--backoff", "300ms", "--backoff-cap", "2s", "--command-timeout", "20s", "--fact-grace", "1s")
	cmd.Args = append(cmd.Args, extra...)
	return e.launch("reconciler", "reconciler", cmd, addr)
}

// operatorToken is the operator of operatorsMux, whose token reads
// /pending.
const operatorToken = "it-operator-token"

// operatorsMux serves r's endpoints with the console mounted on them, for
// one operator (operatorToken): /pending is served behind its sign-in.
func operatorsMux(t *testing.T, e *env, r *recon, reg *tools.Registry) http.Handler {
	t.Helper()
	path := filepath.Join(t.TempDir(), "operators.yaml")
	if err := os.WriteFile(path, []byte("operators:\n  - name: it\n    tokens: [\""+tokenfile.HashToken(operatorToken)+"\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ops, err := console.NewOperatorStore(path)
	if err != nil {
		t.Fatal(err)
	}
	con, err := console.New(console.Config{Operators: ops, Backend: &console.ReconcilerBackend{Reconciler: r.rc, Tools: reg.Specs(),
		Brokers: brokers, Names: e.names}, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	mux := r.rc.Handler(r.reg)
	con.Mount(mux)
	return mux
}

// operatorTokenFile holds operatorToken, for reconciler pending.
func operatorTokenFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "operator.token")
	if err := os.WriteFile(path, []byte(operatorToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
