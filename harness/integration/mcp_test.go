package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds the tenant's token to every request of the MCP client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func mcpSession(t *testing.T, base, token string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "toolexec-it", Version: "1"}, nil)
	tr := &mcp.StreamableClientTransport{Endpoint: base + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}
	cs, err := c.Connect(ctx, tr, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func callMCP(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, map[string]any, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("tools/call %s: %v", p.Name, err)
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc == nil && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &sc)
	}
	return res, sc, text
}

// The go-sdk client lists the tools (idempotency_key required where a
// record is kept, annotations by class), calls one twice with the same
// idempotency_key (one effect, the second a replay), sees a conflict with
// other arguments, and an in-doubt key as an error result that says the
// call will not be executed again.
func TestMCPGoSDKClient(t *testing.T) {
	e := newEnv(t, 3)
	l := newLedger(t)
	yaml := gatewayTools(l)
	e.startInproc(registry(t, yaml), nil)
	gw := e.startGateway(yaml)

	if _, err := mcpSession(t, gw, "wrong-token"); err == nil {
		t.Fatal("an unknown token connected")
	}
	cs, err := mcpSession(t, gw, gwTokens["acme"])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range list.Tools {
		byName[tl.Name] = tl
	}
	checkMCPTool(t, byName["t.refund"], true, false, false)
	checkMCPTool(t, byName["t.irrev"], true, false, true)
	checkMCPTool(t, byName["t.ro"], false, true, false)
	if byName["t.secret"] == nil {
		t.Fatal("acme's allow-listed tool is missing")
	}

	args := map[string]any{"order": "o-1", "amount": 120, "idempotency_key": "run-7/step-3"}
	first, sc1, text1 := callMCP(t, cs, &mcp.CallToolParams{Name: "t.refund", Arguments: args})
	if first.IsError || sc1["status"] != "succeeded" || first.Meta["io.toolexec/was_replay"] != false || !strings.Contains(text1, "ran the tool now") {
		t.Fatalf("first call: %v %v %q", first.Meta, sc1, text1)
	}
	args["amount"] = 120.0
	second, sc2, text2 := callMCP(t, cs, &mcp.CallToolParams{Name: "t.refund", Arguments: args})
	if second.IsError || sc2["was_replay"] != true || second.Meta["io.toolexec/was_replay"] != true || !strings.Contains(text2, "Replay") {
		t.Fatalf("second call: %v %v %q", second.Meta, sc2, text2)
	}
	if second.Meta["io.toolexec/original_called_at"] != first.Meta["io.toolexec/original_called_at"] || sc2["original_intent_id"] != sc1["intent_id"] {
		t.Fatalf("the replay must name the original: %v / %v", first.Meta, second.Meta)
	}
	args["amount"] = 121
	conflict, sc3, text3 := callMCP(t, cs, &mcp.CallToolParams{Name: "t.refund", Arguments: args})
	if !conflict.IsError || sc3["status"] != "conflict" || !strings.Contains(text3, "Conflict") {
		t.Fatalf("conflict: %v %q", sc3, text3)
	}
	if l.total() != 1 {
		t.Fatalf("tool requests %d, want 1", l.total())
	}

	// The key from _meta, as a host may set it; a key in doubt.
	var doubt *mcp.CallToolResult
	var sc4 map[string]any
	var text4 string
	for i := 0; i < 10 && sc4["status"] != "pending"; i++ { // a slow machine may end the first wait before the call started
		doubt, sc4, text4 = callMCP(t, cs, &mcp.CallToolParams{Name: "t.hang", Arguments: map[string]any{},
			Meta: mcp.Meta{"io.toolexec/idempotency-key": "h-meta", "io.toolexec/wait": 3}})
	}
	if !doubt.IsError || sc4["status"] != "pending" || sc4["key"] != "h-meta" || !strings.Contains(text4, "will not be executed again") || !strings.Contains(text4, "unknown") {
		t.Fatalf("in doubt: %v %q", sc4, text4)
	}
	// The caller's mistakes are error results the model can read.
	missing, _, text5 := callMCP(t, cs, &mcp.CallToolParams{Name: "t.refund", Arguments: map[string]any{"order": "o-2", "amount": 1}})
	if !missing.IsError || !strings.Contains(text5, "idempotency_key is required") {
		t.Fatalf("missing key: %q", text5)
	}
	invalid, _, text6 := callMCP(t, cs, &mcp.CallToolParams{Name: "t.refund", Arguments: map[string]any{"order": "o-3", "amount": 0, "idempotency_key": "k"}})
	if !invalid.IsError || !strings.Contains(text6, "/amount") {
		t.Fatalf("schema: %q", text6)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "t.nope", Arguments: map[string]any{}}); err == nil {
		t.Fatal("an unknown tool must be a protocol error")
	}
	if l.total() != 2 {
		t.Fatalf("tool requests %d, want 2 (the refund and the hang)", l.total())
	}

	// globex sees no t.secret.
	gcs, err := mcpSession(t, gw, gwTokens["globex"])
	if err != nil {
		t.Fatal(err)
	}
	glist, err := gcs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(glist.Tools, func(tl *mcp.Tool) bool { return tl.Name == "t.secret" }) {
		t.Fatal("globex sees a tool its allow-list excludes")
	}
}

func checkMCPTool(t *testing.T, tl *mcp.Tool, wantKey, readOnly, destructive bool) {
	t.Helper()
	if tl == nil {
		t.Fatal("tool missing from tools/list")
	}
	schema, _ := tl.InputSchema.(map[string]any)
	req, _ := schema["required"].([]any)
	hasKey := slices.Contains(req, any("idempotency_key"))
	if hasKey != wantKey {
		t.Fatalf("%s: idempotency_key required %v, want %v (schema %v)", tl.Name, hasKey, wantKey, schema)
	}
	a := tl.Annotations
	if a == nil || a.ReadOnlyHint != readOnly || !a.IdempotentHint || a.DestructiveHint == nil || *a.DestructiveHint != destructive {
		t.Fatalf("%s: annotations %+v", tl.Name, a)
	}
}

// MCP details a review found: a tenant's tools/list is private to it (no
// shared cache may serve it to another caller); an idempotency_key of the
// wrong type is answered as such, not as missing; keys with invisible or
// separator characters are refused; a read-only tool does not receive
// the gateway's idempotency_key argument.
func TestMCPKeysAndListing(t *testing.T) {
	e := newEnv(t, 1)
	l := newLedger(t)
	yaml := gatewayTools(l)
	e.startInproc(registry(t, yaml), nil)
	gw := e.startGateway(yaml)
	cs, err := mcpSession(t, gw, gwTokens["acme"])
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if list.CacheScope != "private" {
		t.Fatalf("tools/list cacheScope %q, want private", list.CacheScope)
	}
	for _, bad := range []any{123, map[string]any{}, nil, true} {
		res, _, text := callMCP(t, cs, &mcp.CallToolParams{Name: "t.refund", Arguments: map[string]any{"order": "o", "amount": 1, "idempotency_key": bad}})
		if !res.IsError || !strings.Contains(text, "idempotency_key must be a string") {
			t.Errorf("idempotency_key %v: %q", bad, text)
		}
	}
	for _, bad := range []string{"a\u200bb", "a\u2028b", "a\u00a0b", "a\ufeffb"} {
		res, _, text := callMCP(t, cs, &mcp.CallToolParams{Name: "t.refund", Arguments: map[string]any{"order": "o", "amount": 1, "idempotency_key": bad}})
		if !res.IsError || !strings.Contains(text, "idempotency_key is not valid") {
			t.Errorf("idempotency_key %q: %q", bad, text)
		}
	}
	res, sc, text := callMCP(t, cs, &mcp.CallToolParams{Name: "t.ro", Arguments: map[string]any{"q": 1, "idempotency_key": "ro-1"}})
	result, _ := sc["result"].(map[string]any)
	args, _ := result["args"].(map[string]any)
	if res.IsError || args == nil || args["q"] == nil {
		t.Fatalf("read-only call: %v %q", sc, text)
	}
	if _, sent := args["idempotency_key"]; sent {
		t.Fatalf("the read-only tool received the idempotency_key argument: %v", args)
	}
	if l.total() != 1 {
		t.Fatalf("tool requests %d, want 1 (the read-only call)", l.total())
	}
}
