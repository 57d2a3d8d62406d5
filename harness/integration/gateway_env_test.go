package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/atmostonce/toolexec/gateway"
	"github.com/atmostonce/toolexec/tools"
)

// gatewayTools are the ledger's tools plus what the gateway tests need: a
// schema, an allow-list, a compensatable tool, a read-only one.
func gatewayTools(l *ledger) string {
	u := l.srv.URL
	return l.toolsYAML(
		toolEntry("t.charge", "compensatable", u+"/ok", "5s", "    compensate_with: t.reverse\n") +
			toolEntry("t.reverse", "native_key", u+"/ok", "5s", "") +
			toolEntry("t.ro", "read_only", u+"/ok", "5s", "") +
			toolEntry("t.secret", "native_key", u+"/ok", "5s", "    tenants: [acme]\n    description: only acme sees this\n") +
			toolEntry("t.refund", "native_key", u+"/ok", "5s", `    description: Refund an order.
    input_schema:
      type: object
      required: [order, amount]
      additionalProperties: false
      properties:
        order: {type: string, minLength: 1}
        amount: {type: integer, minimum: 1}
        items: {type: array, items: {type: object, properties: {sku: {type: string}}}}
`))
}

// The two tenants of the gateway tests and their tokens.
var gwTokens = map[string]string{"acme": "acme-token-1", "globex": "globex-token-1"}

func tenantsFile(t *testing.T) string {
	t.Helper()
	return tenantsFileWith(t, nil)
}

// tenantsFileWith is tenantsFile with more YAML in a tenant's entry (its
// limits), by tenant.
func tenantsFileWith(t *testing.T, extra map[string]string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("tenants:\n")
	for _, tenant := range []string{"acme", "globex"} {
		fmt.Fprintf(&b, "  - name: %s\n    tokens: [%q]\n%s", tenant, gateway.HashToken(gwTokens[tenant]), extra[tenant])
	}
	path := filepath.Join(t.TempDir(), "tenants.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startGateway runs a gateway in the test process, serving the API on an
// httptest server, and returns its base URL.
func (e *env) startGateway(toolsYAML string) string {
	e.t.Helper()
	return e.startGatewayReg(toolsYAML, nil)
}

// startGatewayReg is startGateway with the gateway's metrics on reg.
func (e *env) startGatewayReg(toolsYAML string, reg prometheus.Registerer) string {
	e.t.Helper()
	return e.startGatewayWith(toolsYAML, tenantsFile(e.t), reg)
}

// startGatewayWith is startGatewayReg with the tenants file at
// tenantsPath.
func (e *env) startGatewayWith(toolsYAML, tenantsPath string, reg prometheus.Registerer) string {
	e.t.Helper()
	cfg, err := tools.Parse([]byte(toolsYAML))
	if err != nil {
		e.t.Fatal(err)
	}
	tenants, err := gateway.LoadTenants(tenantsPath)
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g, err := gateway.New(ctx, gateway.Config{Brokers: brokers, Prefix: e.prefix, Tools: cfg.Tools,
		Tenants: gateway.NewTenantStore(tenants), InstanceID: "it-" + randHex(3), Logger: testLogger(e.t), Registerer: reg, CallerTrace: e.callerTrace})
	if err != nil {
		e.t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	e.t.Cleanup(func() { srv.Close(); g.Close() })
	return srv.URL
}

// startGatewayProc runs cmd/gateway as its own process, its /metrics on
// a port of its own (proc.metrics), with more flags in extra.
func (e *env) startGatewayProc(name, toolsYAML, tenants string, extra ...string) *proc {
	e.t.Helper()
	addr, metrics := freeAddr(e.t), freeAddr(e.t)
	cmd := exec.Command(gatewayBinary, append([]string{"--brokers", seedList(), "--tools", writeTools(e.t, toolsYAML), "--tenants", tenants,
		"--http-addr", addr, "--metrics-addr", metrics, "--topic-prefix", e.prefix, "--instance-id", name, "--client-id", name}, extra...)...)
	p := e.launch(name, "gateway", cmd, addr)
	p.metrics = metrics
	return p
}

// gwResp is an HTTP answer of the gateway, body decoded.
type gwResp struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r gwResp) str(field string) string { s, _ := r.body[field].(string); return s }

// gwReq is one request to the gateway.
type gwReq struct {
	method, path, tenant, key, body string
	headers                         map[string]string
}

func doGateway(t *testing.T, base string, q gwReq) gwResp {
	t.Helper()
	var body io.Reader
	if q.body != "" {
		body = strings.NewReader(q.body)
	}
	req, err := http.NewRequest(q.method, base+q.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if q.tenant != "" {
		req.Header.Set("Authorization", "Bearer "+gwTokens[q.tenant])
	}
	if q.key != "" {
		req.Header.Set("Idempotency-Key", q.key)
	}
	for k, v := range q.headers {
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 90 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", q.method, q.path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := gwResp{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &out.body); err != nil {
			t.Fatalf("%s %s: body is not a JSON object: %q", q.method, q.path, raw)
		}
	}
	return out
}

// post calls a tool through the gateway.
func post(t *testing.T, base, tenant, tool, key, body string, headers ...string) gwResp {
	t.Helper()
	return doGateway(t, base, gwReq{method: http.MethodPost, path: "/v1/tools/" + tool + "/calls", tenant: tenant, key: key, body: body, headers: pairs(headers)})
}

func get(t *testing.T, base, tenant, path string) gwResp {
	t.Helper()
	return doGateway(t, base, gwReq{method: http.MethodGet, path: path, tenant: tenant})
}

func pairs(kv []string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// want fails the test unless r has the status (and, when code is not
// empty, the problem code).
func (r gwResp) want(t *testing.T, status int, code string) gwResp {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.raw)
	}
	if code != "" {
		if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
			t.Fatalf("Content-Type %q, want application/problem+json: %s", ct, r.raw)
		}
		if r.str("code") != code || r.body["status"] != float64(status) || r.str("type") == "" || r.str("title") == "" {
			t.Fatalf("problem %s, want code %s", r.raw, code)
		}
	}
	return r
}
