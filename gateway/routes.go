package gateway

import (
	"net/http"
	"strings"
	"time"

	"github.com/atmostonce/toolexec/internal/httpserve"
)

// Retry-After of a 202, in seconds. Why they differ: a running call
// usually ends within a second or two; a key in doubt waits for its
// tool's pending_ttl and an investigation.
const (
	retryRunning = 1
	retryInDoubt = 5
	// retryUnavailable is the Retry-After of a 503.
	retryUnavailable = 1
)

// routes is the API. Go's ServeMux picks the method-specific pattern
// first; the bare patterns answer every other method with a 405 problem.
func (g *Gateway) routes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /v1/tools", g.authed("list", g.listTools))
	mux.Handle("POST /v1/tools/{tool}/calls", g.authed("call", g.postCall))
	mux.Handle("GET /v1/tools/{tool}/calls/{key}", g.authed("get", g.getCall))
	mux.Handle("POST /v1/tools/{tool}/calls/{key}/compensate", g.authed("compensate", g.postCompensate))
	mux.Handle("/v1/tools", methodNotAllowed("GET"))
	mux.Handle("/v1/tools/{tool}/calls", methodNotAllowed("POST"))
	mux.Handle("/v1/tools/{tool}/calls/{key}", methodNotAllowed("GET"))
	mux.Handle("/v1/tools/{tool}/calls/{key}/compensate", methodNotAllowed("POST"))
	mux.Handle("/mcp", g.mcpHandler())
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusNotFound, codeNotFound, "no such path: "+r.URL.Path)
	}))
	return mux
}

func methodNotAllowed(allow string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		writeProblem(w, http.StatusMethodNotAllowed, codeMethodNotAllowed, r.Method+" is not allowed here; use "+allow)
	})
}

type tenantHandler func(w http.ResponseWriter, r *http.Request, tenant string)

// authed authenticates the bearer token, then runs h with the token's
// tenant, and counts the request by route and status.
func (g *Gateway) authed(route string, h tenantHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		r, span := g.serverSpan(r)
		defer func() { g.m.observe(route, sw.status, time.Since(start), span); endServerSpan(span, sw.status) }()
		if tenant, ok := g.authenticate(sw, r); ok {
			h(sw, r, tenant)
		}
	})
}

// authenticate returns the tenant of the request's bearer token, or
// answers 401 (with WWW-Authenticate, counted in auth_failures_total) as a
// problem: one check for the API and MCP alike (MCP's refusal is worded
// for its clients, mcpUnauthorized).
func (g *Gateway) authenticate(w http.ResponseWriter, r *http.Request) (string, bool) {
	return g.authenticateOr(w, r, func(w http.ResponseWriter, detail string) {
		writeProblem(w, http.StatusUnauthorized, codeUnauthorized, detail)
	})
}

// authenticateOr is authenticate with the refusal's body written by
// refuse, after the status's headers are set.
func (g *Gateway) authenticateOr(w http.ResponseWriter, r *http.Request, refuse func(w http.ResponseWriter, detail string)) (string, bool) {
	token, sent := bearer(r.Header.Get("Authorization"))
	tenant, ok := "", false
	if sent {
		tenant, ok = g.cfg.Tenants.Current().Authenticate(token)
	}
	if !ok {
		g.m.authFailures.Inc()
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolexec"`)
		refuse(w, g.unauthorizedDetail(sent))
		return "", false
	}
	httpserve.Authenticated(r) // a tenant's connection may stay open for its next call
	return tenant, true
}

// unauthorizedDetail says what was wrong with the credential and, for a
// token that is not known, where the right one is (Config.TokenHint).
func (g *Gateway) unauthorizedDetail(sent bool) string {
	if !sent {
		return "no bearer token: send Authorization: Bearer <token>; the token names the tenant"
	}
	if g.cfg.TokenHint == "" {
		return "token unknown: it names no tenant of this gateway"
	}
	return "token unknown: " + g.cfg.TokenHint
}

func bearer(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// statusWriter remembers the status written, for the metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// toolView is one entry of GET /v1/tools.
type toolView struct {
	Name                   string         `json:"name"`
	Class                  string         `json:"class"`
	Description            string         `json:"description"`
	InputSchema            map[string]any `json:"input_schema"`
	IdempotencyKeyRequired bool           `json:"idempotency_key_required"`
	// ResidualRisk is what the at-most-once promise leaves open for this
	// tool (tools.Spec.ResidualRisk), absent when nothing beyond it.
	ResidualRisk string `json:"residual_risk,omitempty"`
}

func (g *Gateway) listTools(w http.ResponseWriter, _ *http.Request, tenant string) {
	out := struct {
		Tools []toolView `json:"tools"`
	}{Tools: []toolView{}}
	for _, t := range g.visibleTools(tenant) {
		out.Tools = append(out.Tools, toolView{Name: t.name(), Class: string(t.spec.Class), Description: t.spec.Description,
			InputSchema: t.schemaJSON, IdempotencyKeyRequired: t.requiresKey(), ResidualRisk: t.spec.ResidualRisk()})
	}
	writeJSON(w, http.StatusOK, out)
}
