package reconciler

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// scanReconciler is a reconciler with a view, a registry and workers, and
// no Kafka client: enough to scan partition 0, as long as no step sends a
// command.
func scanReconciler(t *testing.T, reg *tools.Registry, maxScan int) *Reconciler {
	t.Helper()
	cfg := Config{Brokers: []string{"unused:9092"}, DataDir: t.TempDir(), Tools: reg, MaxScan: maxScan, Policy: testPolicy,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return time.UnixMilli(1_000_000) }}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.Names.Events = "ev"
	r := &Reconciler{cfg: cfg, m: newMetrics(nil), store: viewStore(t), lookup: RegistryLookup(reg),
		// The stable offset was measured twice after every test deadline,
		// and the view has folded up to it: retries may go.
		owned:   map[int32]*partition{0: {epoch: 1, caughtUp: true, stableAt: 1_000_000, prevStableAt: 1_000_000}},
		running: map[string]bool{}, warned: map[int32]bool{}}
	r.work = newWorkers(cfg, func() {})
	t.Cleanup(r.work.stop)
	return r
}

// putInDoubt folds a started call of tool and its unknown outcome into the
// view: the key is in doubt and past its deadline at the test's now.
func putInDoubt(t *testing.T, r *Reconciler, tenant, key, tool string) {
	t.Helper()
	off := r.owned[0].next
	w := &saga.Waiter{IntentID: "i-" + key, Type: "call", At: 1}
	started := saga.Event{Kind: saga.EvStarted, Tenant: tenant, Key: key, At: 1, IntentID: w.IntentID, Tool: tool,
		ArgsHash: []byte{1}, Args: []byte{0x80}, PendingTTL: 10, RetentionMs: 1 << 30, Attempt: 1, Waiter: w, DownstreamKey: "tk2_" + key}
	unknown := saga.Event{Kind: saga.EvOutcome, Tenant: tenant, Key: key, At: 2, IntentID: w.IntentID, CallID: w.IntentID, Status: saga.StatusUnknown}
	viewFold(t, r, viewRecord(t, off, started), viewRecord(t, off+1, unknown))
}

// fairnessKeys puts n keys in doubt: all but one of tenant "a", whose keys
// sort first, and one of tenant "z", last in the index.
func fairnessKeys(t *testing.T, r *Reconciler, n int, tool string) []string {
	t.Helper()
	var rks []string
	for i := 0; i < n-1; i++ {
		putInDoubt(t, r, "a", fmt.Sprintf("k%02d", i), tool)
		rks = append(rks, wire.RoutingKey("a", fmt.Sprintf("k%02d", i)))
	}
	putInDoubt(t, r, "z", "last", tool)
	return append(rks, "z/last")
}

func escalatedKeys(t *testing.T, st *state.Store) []string {
	t.Helper()
	var out []string
	err := st.ScanAux(investigationPrefix, 1000, func(k, v []byte) error {
		inv, err := decodeInvestigation(v)
		if err != nil {
			return err
		}
		if inv.Escalated {
			tenant, key := splitRK(string(k[len(investigationPrefix):]))
			out = append(out, wire.RoutingKey(tenant, key))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// Escalated keys stay in the doubt index until an operator acts. With
// more of them than MaxScan, a scan that read the same first MaxScan keys
// every time would never plan the others: here tenant z's key would never
// be escalated, and no new key behind the pile would ever be
// investigated.
func TestReconcilerScanReachesEveryKeyPastMaxScan(t *testing.T) {
	reg := tools.NewRegistry()
	if err := reg.Register(tools.Spec{Name: "page", Class: tools.Irreversible, URL: "http://127.0.0.1:1/page"},
		tools.Func(func(context.Context, tools.Request) tools.Outcome { return tools.Outcome{Status: tools.Unknown} })); err != nil {
		t.Fatal(err)
	}
	r := scanReconciler(t, reg, 2)
	want := fairnessKeys(t, r, 7, "page")
	for i := 0; i < 4; i++ { // ceil(7 / 2) scans
		if err := r.scan(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := escalatedKeys(t, r.store); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("escalated after 4 scans with max_scan 2: %v, want all 7: %v", got, want)
	}
	// Escalated keys are counted and listed by every later scan without
	// taking the budget of the keys that need a plan.
	putInDoubt(t, r, "m", "new", "page")
	if err := r.scan(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := len(escalatedKeys(t, r.store)); got != 8 {
		t.Fatalf("a key in doubt behind 7 escalated ones: %d escalated after one more scan, want 8", got)
	}
	if v := gaugeValue(t, r.m.Escalated.WithLabelValues("page")); v != 8 {
		t.Fatalf("escalated_keys gauge %v, want 8", v)
	}
	if n := len(r.Rows()); n != 8 {
		t.Fatalf("%d rows on /pending, want 8", n)
	}
}

// Keys whose retry is still running are examined again by the next scan
// (and skipped); with more of them than MaxScan, a scan from the start
// would never get past them. Each scan must start where the last one
// stopped.
func TestReconcilerScanMovesOnPastRunningRetries(t *testing.T) {
	var mu sync.Mutex
	invoked := map[string]bool{}
	reg := tools.NewRegistry()
	slow := func(ctx context.Context, req tools.Request) tools.Outcome {
		mu.Lock()
		invoked[wire.RoutingKey(req.Tenant, req.Key)] = true
		mu.Unlock()
		<-ctx.Done() // never answers while the test runs
		return tools.Outcome{Status: tools.Unknown, Code: "cancelled"}
	}
	if err := reg.Register(tools.Spec{Name: "pay", Class: tools.NativeKey, URL: "http://127.0.0.1:1/pay"}, tools.Func(slow)); err != nil {
		t.Fatal(err)
	}
	r := scanReconciler(t, reg, 2)
	want := fairnessKeys(t, r, 6, "pay")
	for i := 0; i < 3; i++ { // ceil(6 / 2) scans
		if err := r.scan(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for _, rk := range want {
		if !r.running[rk] {
			t.Errorf("no retry was started for %s in 3 scans of max_scan 2 (running: %v)", rk, r.running)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(invoked)
		mu.Unlock()
		if n == len(want) || time.Now().After(deadline) {
			if n != len(want) {
				t.Fatalf("%d of %d retries reached the tool", n, len(want))
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The walk of the doubt index goes around once from any cursor: every key
// exactly once, the cursor's own key last.
func TestReconcilerWalkDoubtWrapsAround(t *testing.T) {
	r := scanReconciler(t, tools.NewRegistry(), 2)
	for i := 0; i < 5; i++ {
		putInDoubt(t, r, "t", fmt.Sprintf("k%d", i), "x")
	}
	for _, c := range []struct {
		start doubtPos
		want  string
	}{
		{doubtPos{}, "[k0 k1 k2 k3 k4]"},
		{doubtPos{"t", "k1"}, "[k2 k3 k4 k0 k1]"},
		{doubtPos{"t", "k4"}, "[k0 k1 k2 k3 k4]"},
		{doubtPos{"t", "k10"}, "[k2 k3 k4 k0 k1]"}, // a key gone since: from the next one
		{doubtPos{"s", "zz"}, "[k0 k1 k2 k3 k4]"},
	} {
		var got []string
		if err := r.walkDoubt(0, c.start, func(d state.Doubt) (bool, error) { got = append(got, d.Key); return true, nil }); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != c.want {
			t.Errorf("walk from %+v: %v, want %s", c.start, got, c.want)
		}
	}
}

func gaugeValue(t *testing.T, g interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := g.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetGauge().GetValue()
}

func counterValue(t *testing.T, c interface{ Write(*dto.Metric) error }) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// A native_key retry invokes the tool, so it waits until the view has
// folded the log as it stood after the call's deadline: an outcome the
// executor committed meanwhile (not_executed: its attempt was never
// sent) must be seen first, or the tool acts for a call the log says never
// reached it and the key's next call acts again.
func TestReconcilerRetriesOnlyOnAViewFreshSinceTheDeadline(t *testing.T) {
	reg := tools.NewRegistry()
	calls := make(chan string, 4)
	tool := func(_ context.Context, req tools.Request) tools.Outcome {
		calls <- req.Key
		return tools.Outcome{Status: tools.Unknown, Code: "timeout"}
	}
	if err := reg.Register(tools.Spec{Name: "pay", Class: tools.NativeKey, URL: "http://127.0.0.1:1/pay"}, tools.Func(tool)); err != nil {
		t.Fatal(err)
	}
	r := scanReconciler(t, reg, 10)
	putInDoubt(t, r, "acme", "k1", "pay") // deadline: 11 (unix ms); now: 1,000,000
	o := r.owned[0]
	for _, c := range []struct {
		name               string
		prevAt, prev, next int64
		retry              bool
	}{
		{"the last measurement is older than the deadline", 5, 0, o.next, false},
		{"the view has not folded up to it", 20, o.next + 1, o.next, false},
		{"the view folded a measurement taken after the deadline", 20, o.next, o.next, true},
	} {
		o.prevStableAt, o.prevStable = c.prevAt, c.prev
		if err := r.scan(context.Background()); err != nil {
			t.Fatal(err)
		}
		if r.running["acme/k1"] != c.retry {
			t.Fatalf("%s: retry started %v, want %v", c.name, r.running["acme/k1"], c.retry)
		}
	}
	select {
	case <-calls:
	case <-time.After(10 * time.Second):
		t.Fatal("the retry never reached the tool")
	}
}

// splitRK splits "<tenant> 0x00 <key>" (the tail of an investigation
// key); tenants never hold 0x00 (wire.ValidTenant).
func splitRK(rk string) (string, string) {
	for i := 0; i < len(rk); i++ {
		if rk[i] == 0 {
			return rk[:i], rk[i+1:]
		}
	}
	return rk, ""
}
