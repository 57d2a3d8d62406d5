package integration

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// TestTenantFloodStraightToKafka: tenant a floods a slow tool with intents
// produced straight to the intents topic (no gateway, no admission but
// the executor's), tenant b calls a fast other tool meanwhile. The slow
// tool runs none of a's calls to the end until the test lets it, so a's
// intents pile up as fast as they are produced.
//
//   - b's calls are decided and answered while a's wait: the member never
//     stops polling for a's sake;
//   - a holds at most the slow tool's places (65 × its max_in_flight); the
//     rest of a's intents are answered at once not_executed, over_share,
//     with a retry hint, and nothing recorded for them;
//   - a refused key is free: a later call with it runs, with other
//     arguments too, and is not a replay or a conflict;
//   - the metrics count a's admitted and refused intents.
//
// On main before the executor's admission, the member stopped polling
// every partition once MaxQueued calls waited: b's calls got no answer.
func TestTenantFloodStraightToKafka(t *testing.T) {
	e := newEnv(t, 4)
	gate := make(chan struct{})
	var slowMu sync.Mutex
	slowRan := map[string]int{}
	slow := func(ctx context.Context, r tools.Request) tools.Outcome {
		slowMu.Lock()
		slowRan[r.Tenant+"/"+r.Key]++
		slowMu.Unlock()
		select {
		case <-gate:
		case <-ctx.Done():
			return tools.Outcome{Status: tools.Unknown, Code: "cancelled", Attempts: 1}
		}
		return tools.Outcome{Status: tools.Succeeded, Result: map[string]any{"key": r.Key}, Attempts: 1}
	}
	fast := func(ctx context.Context, r tools.Request) tools.Outcome {
		return tools.Outcome{Status: tools.Succeeded, Result: map[string]any{"ok": true}, Attempts: 1}
	}
	reg := tools.NewRegistry()
	const slowInFlight = 2
	for _, s := range []struct {
		spec tools.Spec
		fn   tools.Func
	}{
		{tools.Spec{Name: "f.slow", Class: tools.Irreversible, Timeout: 5 * time.Minute, PendingTTL: 10 * time.Minute, Retention: time.Hour, MaxInFlight: slowInFlight}, slow},
		{tools.Spec{Name: "f.fast", Class: tools.Irreversible, Timeout: 5 * time.Second, PendingTTL: time.Minute, Retention: time.Hour, MaxInFlight: 4}, fast},
	} {
		if err := reg.Register(s.spec, s.fn); err != nil {
			t.Fatal(err)
		}
	}
	metrics := prometheus.NewRegistry()
	m := e.startInproc(reg, func(c *executor.Config) {
		c.MaxInFlight, c.Registerer = 8, metrics // a member that paused its poll once 32 calls waited (4 × MaxInFlight)
	})
	defer func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
		m.stop()
	}()
	c := e.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// b's first call: the member is up and its partitions restored.
	e.call(c, wire.Intent{Tenant: "b", Key: "warm", Tool: "f.fast", Args: map[string]any{}}, 60*time.Second)

	const flood = 200
	pending := make([]*client.Pending, flood)
	for i := range flood {
		p, err := c.Start(ctx, wire.Intent{Tenant: "a", Key: fmt.Sprintf("a-%d", i), Tool: "f.slow", Args: map[string]any{"n": i}})
		if err != nil {
			t.Fatal(err)
		}
		pending[i] = p
	}
	// b's calls are decided while a's wait.
	for i := range 10 {
		res := e.call(c, wire.Intent{Tenant: "b", Key: fmt.Sprintf("b-%d", i), Tool: "f.fast", Args: map[string]any{}}, 30*time.Second)
		if res.Status != codes.StatusSucceeded || res.WasReplay {
			t.Fatalf("b's call %d: %+v", i, res)
		}
	}
	// Every one of a's intents is decided: started (and waiting at the
	// slow tool: no answer before the gate opens), or refused at once.
	var admitted, refusedN int
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		// Only a is refused, and only for its share of the slow tool.
		admitted = int(metric(t, metrics, "toolexec_executor_tenant_admitted_total", "tenant", "a"))
		refusedN = int(metric(t, metrics, "toolexec_executor_tenant_refused_total", "limit", "tool_share"))
		if admitted+refusedN == flood {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of a's %d intents admitted and %d refused after 60 s", admitted, flood, refusedN)
		}
	}
	if max := slowInFlight * 65; admitted > max || admitted <= slowInFlight || refusedN == 0 {
		t.Fatalf("%d of a's %d intents admitted, %d refused; want more than the slow tool's %d running, at most its %d places, the rest refused",
			admitted, flood, refusedN, slowInFlight, max)
	}
	t.Logf("a: %d admitted, %d refused", admitted, refusedN)
	refused := map[int]*wire.Result{}
	for deadline := time.Now().Add(30 * time.Second); len(refused) < refusedN; {
		for i, p := range pending {
			if refused[i] != nil {
				continue
			}
			res, err := nextAnswer(p, 5*time.Millisecond)
			if err != nil {
				continue
			}
			if !res.Busy() || res.Error.Code != codes.ErrOverShare || res.RetryAfterMs <= 0 || res.WasReplay {
				t.Fatalf("a's intent %d answered %+v (error %+v), want not_executed over_share with a retry hint", i, res, res.Error)
			}
			refused[i] = res
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of a's %d refusals answered after 30 s", len(refused), refusedN)
		}
	}
	if n := startedSlow(&slowMu, slowRan); n != slowInFlight {
		t.Fatalf("the slow tool ran %d calls, want its max_in_flight %d", n, slowInFlight)
	}

	// A refused key is free: sent again (with other arguments) once a
	// place is free, it runs as a first call.
	var again int
	for i := range refused {
		again = i
		break
	}
	close(gate)
	for i, p := range pending {
		if refused[i] != nil {
			continue
		}
		res, err := p.Wait(ctx)
		if err != nil || res.Status != codes.StatusSucceeded {
			t.Fatalf("a's admitted intent %d: %+v, %v", i, res, err)
		}
	}
	res := e.call(c, wire.Intent{Tenant: "a", Key: fmt.Sprintf("a-%d", again), Tool: "f.slow", Args: map[string]any{"n": -1}}, 60*time.Second)
	if res.Status != codes.StatusSucceeded || res.WasReplay || res.Attempt != 1 || res.OriginalIntentID != res.IntentID {
		t.Fatalf("a refused key sent again: %+v, want its first call, succeeded", res)
	}
	slowMu.Lock()
	for k, n := range slowRan {
		if n != 1 {
			t.Errorf("the slow tool ran %s %d times", k, n)
		}
	}
	slowMu.Unlock()

	if got := metric(t, metrics, "toolexec_executor_tenant_admitted_total", "tenant", "a"); got != float64(admitted+1) {
		t.Errorf("admitted_total{a} = %v, want %d", got, admitted+1)
	}
	if got := metric(t, metrics, "toolexec_executor_tenant_admitted_total", "tenant", "b"); got != 11 {
		t.Errorf("admitted_total{b} = %v, want 11", got)
	}
	if got := metric(t, metrics, "toolexec_executor_tenant_refused_total", "tenant", "b"); got != 0 {
		t.Errorf("refused_total{b} = %v, want 0", got)
	}
	if got := metric(t, metrics, "toolexec_executor_tenant_refused_total", "tenant", "a"); got != float64(refusedN) {
		t.Errorf("refused_total{a} = %v, want %d, all for tool_share", got, refusedN)
	}
}

// nextAnswer is p's next answer within d.
func nextAnswer(p *client.Pending, d time.Duration) (*wire.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return p.Next(ctx)
}

func startedSlow(mu *sync.Mutex, ran map[string]int) int {
	mu.Lock()
	defer mu.Unlock()
	return len(ran)
}

// TestGatewayAnswersTheExecutorsRefusals: through the gateway, a call the
// executor has no place for is answered 429 (over_share) with Retry-After
// and the executor's answer in the problem; the tenant's next calls of the
// tool are refused at the gateway for the hint (nothing produced), also
// after a refusal the caller did not wait for (Prefer: wait=0); another
// tenant's calls of the tool still get a place; a key refused after its
// 202 is free: GET finds nothing, and the same call sent again runs.
func TestGatewayAnswersTheExecutorsRefusals(t *testing.T) {
	e := newEnv(t, 3)
	l := newLedger(t)
	// t.narrow runs one call at a time: 65 places, 52 of them for a
	// tenant alone (its share).
	yaml := gatewayTools(l) + toolEntry("t.narrow", "irreversible", l.url("/block"), "40s", "    max_in_flight: 1\n    pending_ttl: 2m\n")
	metrics := prometheus.NewRegistry()
	e.startInproc(registry(t, yaml), func(c *executor.Config) { c.Registerer = metrics })
	greg := prometheus.NewRegistry()
	gw := e.startGatewayWith(yaml, tenantsFile(t), greg)

	const sent = 60
	for i := range sent {
		post(t, gw, "acme", "t.narrow", fmt.Sprintf("n-%d", i), `{}`, "Prefer", "wait=0").want(t, http.StatusAccepted, "")
	}
	var admitted, refused float64
	for deadline := time.Now().Add(60 * time.Second); admitted+refused < sent; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the executor decided %v of acme's %d calls", admitted+refused, sent)
		}
		admitted = metric(t, metrics, "toolexec_executor_tenant_admitted_total", "tenant", "acme")
		refused = metric(t, metrics, "toolexec_executor_tenant_refused_total", "tenant", "acme")
	}
	if admitted != 52 || refused != sent-52 {
		t.Fatalf("acme: %v admitted, %v refused; want its share of t.narrow's 65 places, 52", admitted, refused)
	}
	// The refusals came after the 202s: the gateway holds acme's calls of
	// t.narrow for their hint, and tells the next one at once.
	r := post(t, gw, "acme", "t.narrow", "n-held", `{}`).want(t, http.StatusTooManyRequests, "over_share")
	if ra, _ := strconv.Atoi(r.header.Get("Retry-After")); ra < 1 || r.str("limit") != "executor_share" {
		t.Fatalf("acme's call while held: %s (Retry-After %q)", r.raw, r.header.Get("Retry-After"))
	}
	if got := metric(t, greg, "toolexec_gateway_tenant_refused_total", "limit", "executor_share"); got != 1 {
		t.Errorf("the gateway counted %v refusals by executor_share, want 1", got)
	}
	if got := metric(t, metrics, "toolexec_executor_tenant_refused_total", "tenant", "acme"); got != refused {
		t.Errorf("a held call reached the executor: refusals %v, want %v", got, refused)
	}
	// Another tenant finds a place among the free ones.
	post(t, gw, "globex", "t.narrow", "g-1", `{}`, "Prefer", "wait=0").want(t, http.StatusAccepted, "")

	// Once the hold ends, the executor answers for itself: 429 with its
	// answer (the refusal is also what holds acme again).
	var busy gwResp
	for i := 0; ; i++ {
		busy = post(t, gw, "acme", "t.narrow", fmt.Sprintf("n-late-%d", i), `{}`, "Prefer", "wait=10")
		if busy.status != http.StatusTooManyRequests {
			t.Fatalf("acme past its share: %s", busy.raw)
		}
		if _, ok := busy.body["answer"].(map[string]any); ok || i == 100 {
			break
		}
		time.Sleep(200 * time.Millisecond) // held: wait for the hint to pass
	}
	ans, _ := busy.body["answer"].(map[string]any)
	if ans == nil || ans["status"] != "not_executed" || ans["retry_after_ms"] == nil || busy.str("code") != "over_share" || busy.str("intent_id") == "" {
		t.Fatalf("the executor's refusal through the gateway: %s", busy.raw)
	}

	// A key refused after its 202 is free: nothing is known of it, and
	// sent again once there are places it runs.
	var free string
	for i := range sent {
		k := fmt.Sprintf("n-%d", i)
		if g := get(t, gw, "acme", "/v1/tools/t.narrow/calls/"+k); g.status == http.StatusNotFound {
			free = k
			break
		}
	}
	if free == "" {
		t.Fatal("every one of acme's calls has a record; want the refused ones to have none")
	}
	l.releaseAll()
	for i := 0; ; i++ {
		r := post(t, gw, "acme", "t.narrow", free, `{}`, "Prefer", "wait=10")
		if r.status == http.StatusOK {
			if r.str("status") != "succeeded" || r.body["was_replay"] != false {
				t.Fatalf("the refused key sent again: %s", r.raw)
			}
			break
		}
		if r.status != http.StatusTooManyRequests || i == 100 {
			t.Fatalf("the refused key sent again: %s", r.raw)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
