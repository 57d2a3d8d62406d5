package integration

import (
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// A tenant's calls are admitted by its limits from the tenants file: over
// its concurrent_calls (calls produced and not answered yet, also after
// a 202 of Prefer: wait=0) or its calls_per_second, a call is refused at
// once with 429, Retry-After and the limit's name, nothing is produced,
// and the refusal is counted by tenant and limit; another tenant is not
// touched. When the calls in flight are answered, their places are free
// again.
func TestGatewayAdmitsCallsByTenantLimits(t *testing.T) {
	e := newEnv(t, 3)
	l := newLedger(t)
	yaml := gatewayTools(l)
	e.startInproc(registry(t, yaml), nil)
	reg := prometheus.NewRegistry()
	gw := e.startGatewayWith(yaml, tenantsFileWith(t, map[string]string{
		"acme":   "    limits: {concurrent_calls: 2}\n",
		"globex": "    limits: {calls_per_second: 0.001, burst: 1}\n",
	}), reg)

	for i := range 2 {
		post(t, gw, "acme", "t.block", fmt.Sprintf("b-%d", i), `{}`, "Prefer", "wait=0").want(t, http.StatusAccepted, "")
	}
	l.waitArrivals(t, 2, 30*time.Second)
	r := post(t, gw, "acme", "t.ok", "over-1", `{}`, "Prefer", "wait=0").want(t, http.StatusTooManyRequests, "too_many_requests")
	if r.str("limit") != "concurrent_calls" || r.header.Get("Retry-After") != "1" {
		t.Fatalf("the third call in flight: %s (Retry-After %q)", r.raw, r.header.Get("Retry-After"))
	}
	l.mu.Lock()
	n := l.calls["over-1"]
	l.mu.Unlock()
	if n != 0 {
		t.Fatalf("a refused call reached the tool %d times", n)
	}
	cs, err := mcpSession(t, gw, gwTokens["acme"])
	if err != nil {
		t.Fatal(err)
	}
	_, _, text := callMCP(t, cs, &mcp.CallToolParams{Name: "t.ok", Arguments: map[string]any{"idempotency_key": "over-mcp"}})
	if want := "Refused: over the limit concurrent_calls"; len(text) < len(want) || text[:len(want)] != want {
		t.Fatalf("MCP tools/call over the limit: %q", text)
	}

	post(t, gw, "globex", "t.ok", "g-1", `{}`).want(t, http.StatusOK, "")
	r = post(t, gw, "globex", "t.ok", "g-2", `{}`).want(t, http.StatusTooManyRequests, "too_many_requests")
	if ra, _ := strconv.Atoi(r.header.Get("Retry-After")); r.str("limit") != "calls_per_second" || ra < 1 {
		t.Fatalf("globex's second call at 0.001 a second: %s (Retry-After %q)", r.raw, r.header.Get("Retry-After"))
	}

	l.releaseAll() // acme's calls end, and their answers free the places
	refusedAfter := 0
	for i := 0; ; i++ {
		r := post(t, gw, "acme", "t.ok", "after-1", `{}`)
		if r.status == http.StatusOK {
			break
		}
		if r.status != http.StatusTooManyRequests || i == 300 {
			t.Fatalf("acme after its calls were answered: %s", r.raw)
		}
		refusedAfter++
		time.Sleep(100 * time.Millisecond)
	}
	if got := metric(t, reg, "toolexec_gateway_tenant_refused_total", "limit", "concurrent_calls"); got != float64(2+refusedAfter) {
		t.Errorf("refusals by concurrent_calls counted %v, want %d (HTTP, MCP, and while the answers came)", got, 2+refusedAfter)
	}
	if got := metric(t, reg, "toolexec_gateway_tenant_refused_total", "limit", "calls_per_second"); got != 1 {
		t.Errorf("refusals by calls_per_second counted %v, want 1", got)
	}
	if got := metric(t, reg, "toolexec_gateway_tenant_admitted_total", "tenant", "globex"); got != 1 {
		t.Errorf("globex's admitted calls counted %v, want 1", got)
	}
}
