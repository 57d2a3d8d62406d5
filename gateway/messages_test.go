package gateway

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/tools"
)

// offlineGateway serves the routes that answer before anything reaches
// Kafka (authentication, tool lookup): no broker is needed.
func offlineGateway(t *testing.T, hint string, specs ...tools.Spec) http.Handler {
	t.Helper()
	ts, err := ParseTenants([]byte(tenantsYAML(tenantEntry("acme", "tok-a"), tenantEntry("globex", "tok-g"))))
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{cfg: Config{Tools: specs, Tenants: NewTenantStore(ts), TokenHint: hint}, log: slog.Default(), m: newMetrics(nil)}
	if err := g.loadTools(); err != nil {
		t.Fatal(err)
	}
	return g.routes()
}

// problemOf sends a POST to path with the bearer token (none when empty)
// and returns the status and the problem's detail.
func problemOf(t *testing.T, h http.Handler, path, token string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{}`))
	req.Header.Set("Idempotency-Key", "k")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var p problem
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("%s: not a problem: %s", path, rec.Body)
	}
	return rec.Code, p.Detail
}

func TestUnknownToolSuggestsTheNearestVisibleTool(t *testing.T) {
	h := offlineGateway(t, "",
		tools.Spec{Name: "demo.refund"}, tools.Spec{Name: "demo.echo"},
		tools.Spec{Name: "acme.secret_report", Tenants: []string{"acme"}})
	for _, c := range []struct{ token, tool, want string }{
		{"tok-a", "demo.refnd", `did you mean demo.refund?`},
		{"tok-a", "Demo.Echo", `did you mean demo.echo?`},
		{"tok-a", "refund", `did you mean demo.refund?`},                   // the namespace left out
		{"tok-a", "acme.secret_reprt", `did you mean acme.secret_report?`}, // its own tool
		{"tok-g", "acme.secret_reprt", ``},                                 // another tenant's tool is never named
		{"tok-a", "payments.charge", ``},                                   // nothing close
	} {
		code, detail := problemOf(t, h, "/v1/tools/"+c.tool+"/calls", c.token)
		if code != http.StatusNotFound || !strings.Contains(detail, "GET /v1/tools lists the tools this token may call") {
			t.Errorf("%s as %s: %d %q", c.tool, c.token, code, detail)
		}
		if got := strings.Contains(detail, "did you mean"); got != (c.want != "") || !strings.Contains(detail, c.want) {
			t.Errorf("%s as %s: %q, want a suggestion %q", c.tool, c.token, detail, c.want)
		}
		if c.token == "tok-g" && strings.Contains(detail, "secret_report") {
			t.Errorf("a tool outside globex's allow-list leaked: %q", detail)
		}
	}
}

func TestUnauthorizedSaysWhatWasWrongAndWhereTheTokenIs(t *testing.T) {
	hint := "the embedded executor keeps it in <data-dir>/gateway.token"
	h := offlineGateway(t, hint, tools.Spec{Name: "demo.echo"})
	if code, detail := problemOf(t, h, "/v1/tools/demo.echo/calls", ""); code != 401 || !strings.HasPrefix(detail, "no bearer token: send Authorization: Bearer <token>") {
		t.Errorf("no token: %d %q", code, detail)
	}
	if code, detail := problemOf(t, h, "/v1/tools/demo.echo/calls", "tok-wrong"); code != 401 || detail != "token unknown: "+hint {
		t.Errorf("wrong token: %d %q", code, detail)
	}
	bare := offlineGateway(t, "", tools.Spec{Name: "demo.echo"})
	if _, detail := problemOf(t, bare, "/v1/tools/demo.echo/calls", "tok-wrong"); strings.Contains(detail, "gateway.token") || !strings.HasPrefix(detail, "token unknown") {
		t.Errorf("without a hint: %q", detail)
	}
}

// MCP's 401 is a JSON-RPC error in an application/json body: an MCP client
// shows that to its user, where it turns a problem body into a bare
// "Server returned an error response". It says what the API's says.
func TestMCPUnauthorizedIsAJSONRPCErrorInWords(t *testing.T) {
	hint := "the embedded executor keeps it in <data-dir>/gateway.token"
	h := offlineGateway(t, hint, tools.Spec{Name: "demo.echo"})
	for token, want := range map[string]string{"": "no bearer token: send Authorization: Bearer <token>", "tok-wrong": "token unknown: " + hint} {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var body struct {
			JSONRPC string `json:"jsonrpc"`
			ID      any    `json:"id"`
			Error   struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("token %q: not JSON: %s", token, rec.Body)
		}
		if rec.Code != http.StatusUnauthorized || rec.Header().Get("Content-Type") != "application/json" || rec.Header().Get("WWW-Authenticate") == "" ||
			body.JSONRPC != "2.0" || body.ID != nil || body.Error.Code != mcpUnauthorizedCode || !strings.HasPrefix(body.Error.Message, "Unauthorized (401): "+want) {
			t.Errorf("token %q: %d %v %s", token, rec.Code, rec.Header(), rec.Body)
		}
	}
}
