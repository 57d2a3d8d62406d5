package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/internal/tracing"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// Keys of _meta the gateway reads (on tools/call) and writes (on the
// result). A host that keeps its own idempotency key per tool call sets
// metaKey instead of the idempotency_key argument.
const (
	metaKey         = "io.toolexec/idempotency-key"
	metaWait        = "io.toolexec/wait"
	metaWasReplay   = "io.toolexec/was_replay"
	metaOriginalAt  = "io.toolexec/original_called_at"
	metaStatus      = "io.toolexec/status"
	mcpServerName   = "toolexec-gateway"
	mcpInstructions = "Tools run at most once per idempotency_key. Choose the key from your run and step (not a fresh value per attempt), keep it, and send the same key with the same arguments on every retry: a retry returns the first call's outcome instead of acting again."
)

// mcpMaxBody bounds a JSON-RPC request: the arguments' 1 MiB and room for
// the envelope.
const mcpMaxBody = maxBodyBytes + 64<<10

// mcpServers serves /mcp: one mcp.Server per tenant (tools/list differs
// by allow-list), built on first use. Stateless Streamable HTTP: every
// request carries its token and any instance can serve it, as for the
// HTTP API. Safe for concurrent use.
type mcpServers struct {
	g       *Gateway
	handler http.Handler

	mu       sync.Mutex
	byTenant map[string]*mcp.Server
}

func newMCPServers(g *Gateway) *mcpServers {
	s := &mcpServers{g: g, byTenant: map[string]*mcp.Server{}}
	h := mcp.NewStreamableHTTPHandler(s.serverFor, &mcp.StreamableHTTPOptions{Stateless: true, Logger: g.log.With("component", "mcp"),
		MaxRequestBodyBytes: mcpMaxBody})
	// mcpHandler authenticated the request already (authenticate): the
	// SDK's middleware takes the tenant it found, so that a token is
	// checked once and a refusal looks as the API's does.
	verify := func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		tenant, ok := r.Context().Value(tenantKey{}).(string)
		if !ok {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: tenant}, nil
	}
	s.handler = auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
	return s
}

// mcpHandler serves /mcp behind the API's bearer check and counts its
// requests.
func (g *Gateway) mcpHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		r, span := g.serverSpan(r)
		defer func() { g.m.observe("mcp", sw.status, time.Since(start), span); endServerSpan(span, sw.status) }()
		tenant, ok := g.authenticateOr(sw, r, mcpUnauthorized)
		if !ok {
			return
		}
		g.mcp.handler.ServeHTTP(sw, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	})
}

// mcpUnauthorizedCode is the JSON-RPC error code of a refused token: in
// the range JSON-RPC leaves to servers.
const mcpUnauthorizedCode = -32001

// mcpUnauthorized answers 401 with a JSON-RPC error that says what was
// wrong with the token, as the API's problem does. Why not the problem: an
// MCP client shows a JSON-RPC error in a 4xx body to its user, but turns
// any other 4xx body into a bare "Server returned an error response"
// (the Python SDK's streamable HTTP client, mcp 2.x), and the user learns
// nothing of the token. The id is null: the request was not read.
func mcpUnauthorized(w http.ResponseWriter, detail string) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": mcpUnauthorizedCode, "message": "Unauthorized (401): " + detail}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = w.Write(body)
}

// tenantKey holds the authenticated tenant in an MCP request's context.
type tenantKey struct{}

// serverFor returns the authenticated tenant's server. Why a bound: the
// cache keeps one server per tenant seen; reloads can rename tenants, so
// it is cleared when it outgrows the largest tenants file.
func (s *mcpServers) serverFor(r *http.Request) *mcp.Server {
	ti := auth.TokenInfoFromContext(r.Context())
	if ti == nil || ti.UserID == "" {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if srv, ok := s.byTenant[ti.UserID]; ok {
		return srv
	}
	if len(s.byTenant) >= maxTenants {
		clear(s.byTenant)
	}
	srv := s.g.newMCPServer(ti.UserID)
	s.byTenant[ti.UserID] = srv
	return srv
}

func (g *Gateway) newMCPServer(tenant string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: mcpServerName, Version: "1"}, &mcp.ServerOptions{
		Instructions: mcpInstructions,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		SetCacheable: privateCache,
	})
	for _, t := range g.visibleTools(tenant) {
		srv.AddTool(mcpTool(t), g.mcpCall(tenant, t))
	}
	return srv
}

// privateCache marks every cacheable result (tools/list above all)
// private: a tenant's list is its own (the tools' allow-lists), so no
// shared cache may serve it to another caller. The SDK's default is
// public.
func privateCache(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" }

// mcpTool describes t for tools/list. Annotations come from the class:
// readOnlyHint for read_only, destructiveHint for irreversible, and
// idempotentHint for every tool: repeating a call with the same
// idempotency_key has no further effect (that is what the gateway
// guarantees), and a read-only call has none at all. Hosts must not take
// idempotentHint as license to retry with a new key.
func mcpTool(t *tool) *mcp.Tool {
	ro := t.spec.Class.ReadOnly()
	destructive, openWorld := t.spec.Class.Destructive(), true
	return &mcp.Tool{
		Name:        t.name(),
		Description: mcpDescription(t),
		InputSchema: mcpSchema(t),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ro, IdempotentHint: true, DestructiveHint: &destructive, OpenWorldHint: &openWorld},
	}
}

func mcpDescription(t *tool) string {
	d := t.spec.Description
	if t.requiresKey() {
		d = strings.TrimSpace(d + "\n\nRuns at most once per idempotency_key: send the same key with the same arguments on every retry of this action.")
	}
	if t.spec.NeedsApproval() {
		d += " " + approvalNote
	}
	return d
}

// mcpSchema is the tool's input schema, plus the required idempotency_key
// argument for every tool that keeps a record: the agent chooses the key,
// keeps it and sends it again on every retry, so it must be an argument.
func mcpSchema(t *tool) map[string]any {
	var s map[string]any
	b, _ := json.Marshal(t.schemaJSON)
	_ = json.Unmarshal(b, &s) // a deep copy: the listing must not alias the validator's document
	if !t.requiresKey() {
		return s
	}
	props, _ := s["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
	}
	props[tools.ReservedArg] = map[string]any{
		"type": "string", "minLength": 1, "maxLength": wire.MaxKeyBytes,
		"description": "Idempotency key of this action, chosen by you and kept in your state: the same key (with the same arguments) on every retry returns the first call's outcome instead of acting twice. Derive it from the run and the step, never a fresh random value per attempt. " +
			"At most 256 bytes of UTF-8 (maxLength counts characters), without control or invisible characters, without separators but the ASCII space, not beginning or ending with a space; compared byte for byte.",
	}
	s["properties"] = props
	req, _ := s["required"].([]any)
	s["required"] = append(req, tools.ReservedArg)
	return s
}

// mcpCall is the tools/call handler of t for tenant. Mistakes of the
// caller (no key, bad arguments, a conflict) are error results the model
// can read and correct, not protocol errors.
func (g *Gateway) mcpCall(tenant string, t *tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		if ti := req.Extra.TokenInfo; ti == nil || ti.UserID != tenant {
			return nil, errors.New("gateway: the session's tenant does not match the token")
		}
		in, errRes := mcpIntent(tenant, t, req.Params)
		if errRes != nil {
			g.m.mcpCalls.WithLabelValues("invalid").Inc()
			return errRes, nil
		}
		in.wait = g.mcpWait(req.Params.Meta)
		ctx, span := g.mcpSpan(ctx, in)
		defer endProduceSpan(span, nil)
		rep, err := g.send(ctx, in)
		if le, ok := limitOf(err); ok {
			g.m.mcpCalls.WithLabelValues("refused").Inc()
			return errorResult(fmt.Sprintf("Refused: over the limit %s (%s). Nothing ran. Call again with the same idempotency_key after %d s.",
				le.Limit, le.Detail, le.RetryAfter)), nil
		}
		if rej, ok := refusal(err); ok {
			g.m.mcpCalls.WithLabelValues("invalid").Inc()
			return errorResult(fmt.Sprintf("Rejected (%s): %s. Nothing ran.", rej.Reason, rej.Detail)), nil
		}
		if errors.Is(err, errUnavailable) {
			g.m.mcpCalls.WithLabelValues("unavailable").Inc()
			return errorResult("The call could not be sent (the service is unavailable). Nothing ran. Call again with the same idempotency_key."), nil
		}
		if err != nil {
			return nil, err
		}
		return mcpResult(rep, in.wait), nil
	}
}

// mcpIntent reads the key and arguments of a tools/call.
func mcpIntent(tenant string, t *tool, p *mcp.CallToolParamsRaw) (intentReq, *mcp.CallToolResult) {
	args, err := parseArgs(p.Arguments)
	if errors.Is(err, errJSONText) {
		return intentReq{}, errorResult("Invalid arguments: " + err.Error() + ". Nothing ran.")
	}
	if err != nil {
		return intentReq{}, errorResult("The arguments must be a JSON object.")
	}
	key, msg := mcpKey(args, p.Meta, t)
	if msg != "" {
		return intentReq{}, errorResult(msg)
	}
	delete(args, tools.ReservedArg) // the gateway's argument, never the tool's (tools.ReservedArg)
	wargs, err := wireArgs(args)
	if err != nil {
		return intentReq{}, errorResult("Invalid arguments: the number at " + err.Error() + ". Nothing ran.")
	}
	if errs := t.validate(wargs); len(errs) > 0 {
		return intentReq{}, errorResult(schemaText(t, errs))
	}
	tp, ts := mcpTraceContext(p.Meta)
	return intentReq{typ: wire.TypeCall, tenant: tenant, tool: t, key: key, args: wargs, traceparent: tp, tracestate: ts}, nil
}

// mcpKey takes the idempotency_key argument, else the host's _meta key;
// a read-only tool without either gets a fresh key. A key that is not a
// string is answered as such, not as a missing one.
func mcpKey(args map[string]any, meta mcp.Meta, t *tool) (string, string) {
	var key string
	arg, inArgs := args[tools.ReservedArg]
	mk, inMeta := meta[metaKey]
	switch {
	case inArgs && t.requiresKey():
		s, ok := arg.(string)
		if !ok {
			return "", fmt.Sprintf("idempotency_key must be a string, not %s: choose a key for this action (from your run and step), keep it, and send the same key on every retry.", jsonType(arg))
		}
		key = s
	case inMeta:
		s, ok := mk.(string)
		if !ok {
			return "", fmt.Sprintf("_meta %q must be a string, not %s.", metaKey, jsonType(mk))
		}
		key = s
	}
	switch {
	case key == "" && t.requiresKey():
		return "", fmt.Sprintf("idempotency_key is required: %s has side effects. Choose a key for this action (from your run and step), keep it, and send the same key on every retry.", t.name())
	case key == "":
		return "read-" + client.NewID(), ""
	case wire.CheckKey(key) != nil:
		return "", fmt.Sprintf("idempotency_key is not valid (%v): it is 1 to %d bytes of UTF-8, without control or invisible characters, "+
			"without separators but the ASCII space, not beginning or ending with a space, and not \".\" or \"..\".", wire.CheckKey(key), wire.MaxKeyBytes)
	}
	return key, ""
}

// jsonType names the JSON type of a decoded value, for messages.
func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64, int64:
		return "a number"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	}
	return "a " + fmt.Sprintf("%T", v)
}

func schemaText(t *tool, errs []schemaError) string {
	var b strings.Builder
	fmt.Fprintf(&b, "The arguments do not match the input schema of %s:", t.name())
	for _, e := range errs {
		path := e.Path
		if path == "" {
			path = "(the arguments)"
		}
		fmt.Fprintf(&b, "\n- at %s: %s", path, e.Message)
	}
	return b.String()
}

// mcpTraceContext reads the W3C trace context an MCP client puts in a
// request's _meta ("traceparent", "tracestate"), bounded as the wire
// bounds the headers; "" for what is absent or too long.
func mcpTraceContext(meta mcp.Meta) (traceparent, tracestate string) {
	tp, _ := meta[tracing.TraceparentHeader].(string)
	ts, _ := meta[tracing.TracestateHeader].(string)
	return callerTrace(tp, ts)
}

// mcpWait reads _meta["io.toolexec/wait"] (seconds), default DefaultWait,
// at most MaxWait.
func (g *Gateway) mcpWait(meta mcp.Meta) time.Duration {
	if n, ok := meta[metaWait].(float64); ok && n >= 0 {
		if n >= g.cfg.MaxWait.Seconds() { // before the product, which overflows a Duration past 9.2e9 s
			return g.cfg.MaxWait
		}
		return time.Duration(n * float64(time.Second))
	}
	return g.cfg.DefaultWait
}

func errorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// mcpResult turns the answer into a CallToolResult: structuredContent is
// the answer, isError is set for every status but succeeded, and both
// _meta and the text say whether this was a replay, so that the model
// knows it did not act twice.
func mcpResult(rep reply, wait time.Duration) *mcp.CallToolResult {
	var res *wire.Result
	var summary string
	switch st := replyState(rep); {
	case st == stateRunning:
		res = runningAnswer(rep.intent)
		summary = fmt.Sprintf("No answer within %s. The outcome is not known yet: the call is running or is being investigated, and it will not be executed again. Call again later with the same idempotency_key and arguments to get the outcome; do not use a new key for this action.", wait)
	case st == stateInDoubt && rep.res.AwaitingApproval():
		res = rep.res
		summary = approvalText(res)
	case st == stateInDoubt:
		res = rep.res
		summary = "The outcome is unknown: the tool may have acted, but no answer came. It is being investigated, and the call will not be executed again. Call again later with the same idempotency_key and arguments to learn the outcome; do not use a new key for this action."
	default:
		res = rep.res
		summary = terminalText(res)
	}
	body := answerJSON(res)
	b, _ := json.Marshal(body)
	out := &mcp.CallToolResult{
		IsError:           res.Status != codes.StatusSucceeded && !res.AwaitingApproval(),
		StructuredContent: body,
		Content:           []mcp.Content{&mcp.TextContent{Text: summary + "\n" + string(b)}},
	}
	out.Meta = mcp.Meta{metaWasReplay: res.WasReplay, metaOriginalAt: res.OriginalCalledAt, metaStatus: res.Status}
	return out
}

func terminalText(res *wire.Result) string {
	if s := approvalTerminalText(res); s != "" {
		return s
	}
	var s string
	switch res.Status {
	case codes.StatusConflict:
		return "Conflict: this idempotency_key was already used with other arguments. Nothing ran. Use a new key for a new action, or send the original arguments to get the original outcome."
	case codes.StatusRejected:
		return fmt.Sprintf("Rejected (%s): %s. Nothing ran.", errCode(res), errMessage(res, "the call was refused"))
	case codes.StatusSucceeded:
		s = "Succeeded."
	case codes.StatusFailed:
		s = fmt.Sprintf("Failed (%s: %s). This outcome is final for this idempotency_key; to try again, use a new key.", errCode(res), errMessage(res, "the tool refused"))
	case codes.StatusNotExecuted:
		if res.Busy() {
			return fmt.Sprintf("Refused: no place for the call now (%s: %s). Nothing ran. Call again with the same idempotency_key after %d s, and call less meanwhile.",
				res.Error.Code, res.Error.Message, retryBusySeconds(res.RetryAfter()))
		}
		return "Not executed: the tool was never reached and nothing happened. Calling again with the same idempotency_key is safe and runs it."
	default:
		s = res.Status + "."
		if res.Error != nil {
			s = fmt.Sprintf("%s (%s: %s).", res.Status, res.Error.Code, res.Error.Message)
		}
	}
	if res.WasReplay {
		return fmt.Sprintf("%s Replay: this action already ran at %s; it was not run again, this is its recorded outcome.",
			s, time.UnixMilli(res.OriginalCalledAt).UTC().Format(time.RFC3339))
	}
	return s + " This call ran the tool now."
}

func errCode(res *wire.Result) string {
	if res.Error != nil {
		return res.Error.Code
	}
	return "rejected"
}
