package integration

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/gateway"
)

// The HTTP table of docs/gateway.md, row by row, against a real executor:
// 200 (succeeded, a replay, failed, not_executed), 422, 400 (rejected,
// missing and malformed keys, bad JSON, schema), 401, 404, 202, 405. The
// cases share one executor and one gateway (each uses keys of its own and
// counts the tool requests it causes), so that the suite stays short on a
// real broker; they run in order, and the one that releases the ledger's
// blocked calls runs last.
func TestGatewayHTTP(t *testing.T) {
	e := newEnv(t, 3)
	e.callerTrace = gateway.TraceContinue // the callers' traceparent reaches the tool (the default, link: TestGatewayLinksAnUntrustedCallersTrace)
	l := newLedger(t)
	yaml := gatewayTools(l)
	e.startInproc(registry(t, yaml), nil)
	gw := e.startGateway(yaml)
	for _, c := range []struct {
		name string
		run  func(*testing.T, string, *ledger)
	}{
		{"the tool list", gwListTools},
		{"a call, its replay and a conflict", gwCallReplayConflict},
		{"terminal outcomes are 200", gwTerminalOutcomes},
		{"refusals: 400 401 404 405 413", gwRefusals},
		{"two concurrent POSTs with one key", gwConcurrentSameKey},
		{"tenant isolation: 404 for a foreign key", gwTenantIsolation},
		{"202 running and in doubt, GET follows", gwAcceptedRunningAndInDoubt},
	} {
		if !t.Run(c.name, func(t *testing.T) { c.run(t, gw, l) }) {
			return
		}
	}
}

// A call, its replay (other key order, 120 as 120.0) and a conflict: one
// tool request.
func gwCallReplayConflict(t *testing.T, gw string, l *ledger) {
	base := l.total()

	first := post(t, gw, "acme", "t.ok", "order-1", `{"amount":120,"currency":"EUR"}`).want(t, 200, "")
	if first.header.Get("Idempotent-Replayed") != "false" || first.str("status") != "succeeded" || first.body["was_replay"] != false {
		t.Fatalf("first call: %v %s", first.header, first.raw)
	}
	if first.str("tenant") != "acme" || first.str("key") != "order-1" || first.str("intent_id") == "" || first.header.Get("Preference-Applied") != "wait=10" {
		t.Fatalf("first call fields: %v %s", first.header, first.raw)
	}
	replay := post(t, gw, "acme", "t.ok", `"order-1"`, `{"currency":"EUR","amount":120.0}`).want(t, 200, "")
	if replay.header.Get("Idempotent-Replayed") != "true" || replay.body["was_replay"] != true || replay.str("original_intent_id") != first.str("intent_id") {
		t.Fatalf("replay: %v %s", replay.header, replay.raw)
	}
	if replay.body["original_called_at"] != first.body["original_called_at"] {
		t.Fatalf("the replay must name the original call: %s / %s", first.raw, replay.raw)
	}
	conflict := post(t, gw, "acme", "t.ok", "order-1", `{"amount":121,"currency":"EUR"}`).want(t, 422, "args_mismatch")
	if !strings.Contains(conflict.str("detail"), first.str("intent_id")) {
		t.Fatalf("conflict detail: %s", conflict.raw)
	}
	if n := (l.total() - base); n != 1 {
		t.Fatalf("tool requests %d, want 1", n)
	}
}

// 200 carries every terminal outcome: failed (replayed as failed) and
// not_executed; the traceparent reaches the tool.
func gwTerminalOutcomes(t *testing.T, gw string, l *ledger) {
	base := l.total()

	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	failed := post(t, gw, "acme", "t.fail", "f-1", `{}`, "traceparent", tp).want(t, 200, "")
	if failed.str("status") != "failed" || failed.body["error"].(map[string]any)["code"] != "http_400" {
		t.Fatalf("failed: %s", failed.raw)
	}
	if again := post(t, gw, "acme", "t.fail", "f-1", `{}`).want(t, 200, ""); again.str("status") != "failed" || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("failed replay: %s", again.raw)
	}
	if (l.total() - base) != 1 {
		t.Fatalf("tool requests %d, want 1", (l.total() - base))
	}
	if got := l.headerOf("acme", "f-1", "traceparent"); got != tp {
		t.Fatalf("traceparent at the tool %q, want %q", got, tp)
	}
	// A traceparent that is not W3C's is dropped, and the call runs: it is
	// never forwarded for the executor to reject.
	for i, bad := range []string{tp + "-extra", strings.Repeat("z", 55), "00-" + strings.Repeat("0", 32) + "-00f067aa0ba902b7-01"} {
		key := fmt.Sprintf("tp-%d", i)
		if r := post(t, gw, "acme", "t.ok", key, `{}`, "traceparent", bad).want(t, 200, ""); r.str("status") != "succeeded" {
			t.Fatalf("a call with traceparent %q: %s", bad, r.raw)
		}
		if got := l.headerOf("acme", key, "traceparent"); got != "" {
			t.Fatalf("traceparent %q reached the tool as %q", bad, got)
		}
	}
	refused := post(t, gw, "acme", "t.refused", "r-1", `{}`).want(t, 200, "")
	if refused.str("status") != "not_executed" || refused.header.Get("Idempotent-Replayed") != "false" {
		t.Fatalf("not_executed: %s", refused.raw)
	}
	// A read-only tool needs no key.
	if ro := post(t, gw, "acme", "t.ro", "", `{"q":1}`).want(t, 200, ""); ro.str("status") != "succeeded" {
		t.Fatalf("read-only: %s", ro.raw)
	}
}

// 400 for everything the caller got wrong, before or by the executor;
// 401 without a valid token; 404 for an unknown or hidden tool; 405 for
// another method; 413 for a huge body. Nothing of it reaches a tool.
func gwRefusals(t *testing.T, gw string, l *ledger) {
	base := l.total()

	post(t, gw, "acme", "t.ok", "", `{}`).want(t, 400, "missing_idempotency_key")
	post(t, gw, "acme", "t.ok", `"unterminated`, `{}`).want(t, 400, "invalid_idempotency_key")
	post(t, gw, "acme", "t.ok", strings.Repeat("k", 257), `{}`).want(t, 400, "invalid_idempotency_key")
	post(t, gw, "acme", "t.ok", "k-json", `[1,2]`).want(t, 400, "invalid_json")
	post(t, gw, "acme", "t.ok", "k-json", `{"a":1} {"b":2}`).want(t, 400, "invalid_json")
	bad := post(t, gw, "acme", "t.refund", "k-schema", `{"order":"","amount":0,"items":[{"sku":5}],"x":1}`).want(t, 400, "invalid_args")
	paths := map[string]bool{}
	for _, e := range bad.body["errors"].([]any) {
		paths[e.(map[string]any)["path"].(string)] = true
	}
	for _, p := range []string{"/order", "/amount", "/items/0/sku", ""} {
		if !paths[p] {
			t.Errorf("schema errors %s do not name %q", bad.raw, p)
		}
	}
	if !strings.Contains(bad.str("detail"), "t.refund") {
		t.Errorf("detail %q", bad.str("detail"))
	}
	// The gateway applies the tool's max_args_bytes as the executor would.
	post(t, gw, "acme", "t.small", "k-big", `{"blob":"`+strings.Repeat("x", 200)+`"}`).want(t, 400, "oversized")
	// What the executor would reject is refused before anything is
	// produced, with the executor's reason (wire.Admit): arguments nested
	// deeper than the wire allows, even with Prefer: wait=0 (never a 202
	// for an intent that will be rejected).
	deep := strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40)
	rej := post(t, gw, "acme", "t.ok", "k-deep", deep, "Prefer", "wait=0").want(t, 400, "invalid_args")
	if rej.str("intent_id") != "" || rej.body["errors"] != nil {
		t.Fatalf("a refusal before producing names no intent: %s", rej.raw)
	}
	// Numbers are exact: 2^64+1 is not carried as 2^64 (another call's
	// replay), and a huge exponent is refused before the schema costs CPU.
	post(t, gw, "acme", "t.ok", "k-2p64", `{"n":18446744073709551617}`).want(t, 400, "invalid_args")
	post(t, gw, "acme", "t.refund", "k-exp", `{"order":"o","amount":1e999999}`).want(t, 400, "invalid_args")
	// One key grammar: keys an HTTP path cannot name, or that print
	// alike, are refused as they would be on Kafka and MCP.
	for _, k := range []string{".", "..", `" padded "`, `%"a%e2%80%aeb"`, `%"nul%00"`} {
		post(t, gw, "acme", "t.ok", k, `{}`).want(t, 400, "invalid_idempotency_key")
	}
	post(t, gw, "acme", "t.ok", "k-huge", `{"blob":"`+strings.Repeat("x", 1<<20)+`"}`).want(t, 413, "payload_too_large")

	noToken := doGateway(t, gw, gwReq{method: http.MethodPost, path: "/v1/tools/t.ok/calls", key: "k", body: "{}"}).want(t, 401, "unauthorized")
	if !strings.HasPrefix(noToken.header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("WWW-Authenticate %q", noToken.header.Get("WWW-Authenticate"))
	}
	doGateway(t, gw, gwReq{method: http.MethodPost, path: "/v1/tools/t.ok/calls", key: "k", body: "{}",
		headers: map[string]string{"Authorization": "Bearer not-a-token"}}).want(t, 401, "unauthorized")
	doGateway(t, gw, gwReq{method: http.MethodGet, path: "/v1/tools", headers: map[string]string{"Authorization": "Basic " + gwTokens["acme"]}}).want(t, 401, "unauthorized")

	post(t, gw, "acme", "t.nope", "k", `{}`).want(t, 404, "unknown_tool")
	post(t, gw, "globex", "t.secret", "k", `{}`).want(t, 404, "unknown_tool") // not on its allow-list
	wrong := doGateway(t, gw, gwReq{method: http.MethodPut, path: "/v1/tools/t.ok/calls", tenant: "acme", body: "{}"}).want(t, 405, "method_not_allowed")
	if wrong.header.Get("Allow") != "POST" {
		t.Fatalf("Allow %q", wrong.header.Get("Allow"))
	}
	if n := (l.total() - base); n != 0 {
		t.Fatalf("tool requests %d, want 0", n)
	}
}

// 202 when the wait ends first: still running (Location, Retry-After),
// then the GET of the Location follows the key to its answer without
// running anything; and a key in doubt (pending).
func gwAcceptedRunningAndInDoubt(t *testing.T, gw string, l *ledger) {
	base := l.total()

	running := post(t, gw, "acme", "t.block", "deploy/7", `{"service":"api"}`, "Prefer", "wait=1").want(t, 202, "")
	if running.str("status") != "running" || running.header.Get("Retry-After") != "1" || running.header.Get("Preference-Applied") != "wait=1" {
		t.Fatalf("running: %v %s", running.header, running.raw)
	}
	loc := running.header.Get("Location")
	if loc != "/v1/tools/t.block/calls/deploy%2F7" {
		t.Fatalf("Location %q", loc)
	}
	if g := get(t, gw, "acme", loc).want(t, 202, ""); g.str("status") != "running" || g.header.Get("Location") != loc {
		t.Fatalf("GET while running: %s", g.raw)
	}
	l.releaseAll()
	var done gwResp
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if done = get(t, gw, "acme", loc); done.status == 200 {
			break
		}
	}
	done.want(t, 200, "")
	if done.str("status") != "succeeded" || done.header.Get("Idempotent-Replayed") != "true" || done.str("original_intent_id") != running.str("intent_id") {
		t.Fatalf("GET after the call: %s", done.raw)
	}

	doubt := inDoubt(t, func() gwResp { return post(t, gw, "acme", "t.hang", "h-1", `{}`, "Prefer", "wait=3").want(t, 202, "") })
	if doubt.str("status") != "pending" || doubt.body["error"].(map[string]any)["code"] != "in_doubt" || doubt.header.Get("Retry-After") != "5" {
		t.Fatalf("in doubt: %v %s", doubt.header, doubt.raw)
	}
	if g := get(t, gw, "acme", doubt.header.Get("Location")).want(t, 202, ""); g.str("status") != "pending" {
		t.Fatalf("GET in doubt: %s", g.raw)
	}
	// A retry of a key in doubt is parked too: nothing runs again.
	post(t, gw, "acme", "t.hang", "h-1", `{}`, "Prefer", "wait=0").want(t, 202, "")
	if n := (l.total() - base); n != 2 {
		t.Fatalf("tool requests %d, want 2 (one block, one hang)", n)
	}
}

// Two concurrent POSTs with one key: one tool request, both answered, one
// of them a replay.
func gwConcurrentSameKey(t *testing.T, gw string, l *ledger) {
	base := l.total()

	var wg sync.WaitGroup
	answers := make([]gwResp, 2)
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = post(t, gw, "acme", "t.slow", "pay-9", `{"amount":5}`, "Prefer", "wait=30")
		}()
	}
	wg.Wait()
	replayed := 0
	for _, a := range answers {
		a.want(t, 200, "")
		if a.str("status") != "succeeded" {
			t.Fatalf("answer %s", a.raw)
		}
		if a.header.Get("Idempotent-Replayed") == "true" {
			replayed++
		}
	}
	if replayed != 1 {
		t.Fatalf("want exactly one replay: %s / %s", answers[0].raw, answers[1].raw)
	}
	if n := (l.total() - base); n != 1 {
		t.Fatalf("tool requests %d, want 1", n)
	}
}

// Tenant globex can neither read nor compensate acme's key: 404, exactly
// as for a key that does not exist. Its own key of the same name is
// another key. GET never executes.
func gwTenantIsolation(t *testing.T, gw string, l *ledger) {
	base := l.total()

	post(t, gw, "acme", "t.charge", "ch-1", `{"amount":10}`).want(t, 200, "")
	get(t, gw, "acme", "/v1/tools/t.charge/calls/ch-1").want(t, 200, "")
	foreign := get(t, gw, "globex", "/v1/tools/t.charge/calls/ch-1").want(t, 404, "unknown_key")
	unknown := get(t, gw, "globex", "/v1/tools/t.charge/calls/never-used").want(t, 404, "unknown_key")
	if foreign.raw != unknown.raw {
		t.Fatalf("a foreign key must look like an unknown one:\n%s\n%s", foreign.raw, unknown.raw)
	}
	doGateway(t, gw, gwReq{method: http.MethodPost, path: "/v1/tools/t.charge/calls/ch-1/compensate", tenant: "globex"}).want(t, 404, "unknown_key")
	get(t, gw, "acme", "/v1/tools/t.ok/calls/ch-1").want(t, 404, "unknown_key") // another tool's key
	if n := (l.total() - base); n != 1 {
		t.Fatalf("tool requests %d, want 1: a GET or a refused compensate ran something", n)
	}
	// globex's ch-1 is its own key: it runs.
	own := post(t, gw, "globex", "t.charge", "ch-1", `{"amount":10}`).want(t, 200, "")
	if own.header.Get("Idempotent-Replayed") != "false" || own.str("tenant") != "globex" {
		t.Fatalf("globex's own key: %s", own.raw)
	}
	// acme's compensation is acme's alone, and runs once.
	comp := doGateway(t, gw, gwReq{method: http.MethodPost, path: "/v1/tools/t.charge/calls/ch-1/compensate", tenant: "acme"}).want(t, 200, "")
	if comp.str("status") != "compensated" || comp.header.Get("Idempotent-Replayed") != "false" {
		t.Fatalf("compensate: %s", comp.raw)
	}
	again := doGateway(t, gw, gwReq{method: http.MethodPost, path: "/v1/tools/t.charge/calls/ch-1/compensate", tenant: "acme"}).want(t, 200, "")
	if again.str("status") != "compensated" || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("compensate again: %s", again.raw)
	}
	if g := get(t, gw, "globex", "/v1/tools/t.charge/calls/ch-1").want(t, 200, ""); g.str("status") != "succeeded" {
		t.Fatalf("globex's key after acme's compensation: %s", g.raw)
	}
	if n := (l.total() - base); n != 3 { // acme's charge and its reversal, globex's charge
		t.Fatalf("tool requests %d, want 3", n)
	}
	// A tool without compensate_with cannot be compensated.
	post(t, gw, "acme", "t.ok", "ok-1", `{}`).want(t, 200, "")
	doGateway(t, gw, gwReq{method: http.MethodPost, path: "/v1/tools/t.ok/calls/ok-1/compensate", tenant: "acme"}).want(t, 409, "not_compensatable")
}

// GET /v1/tools lists what the tenant may call, with schemas.
func gwListTools(t *testing.T, gw string, _ *ledger) {
	names := func(tenant string) map[string]map[string]any {
		r := get(t, gw, tenant, "/v1/tools").want(t, 200, "")
		out := map[string]map[string]any{}
		for _, x := range r.body["tools"].([]any) {
			m := x.(map[string]any)
			out[m["name"].(string)] = m
		}
		return out
	}
	acme, globex := names("acme"), names("globex")
	if acme["t.secret"] == nil || globex["t.secret"] != nil {
		t.Fatalf("allow-list: acme %v globex %v", acme["t.secret"], globex["t.secret"])
	}
	refund := acme["t.refund"]
	if refund["description"] != "Refund an order." || refund["class"] != "native_key" || refund["idempotency_key_required"] != true {
		t.Fatalf("t.refund: %v", refund)
	}
	if req := refund["input_schema"].(map[string]any)["required"]; len(req.([]any)) != 2 {
		t.Fatalf("schema: %v", refund["input_schema"])
	}
	if acme["t.ro"]["idempotency_key_required"] != false {
		t.Fatalf("t.ro: %v", acme["t.ro"])
	}
	// A probe tool that does not fence states its residual risk; the
	// others have none to state.
	if risk, _ := acme["t.hang"]["residual_risk"].(string); !strings.Contains(risk, "probe_fence") {
		t.Fatalf("t.hang (probe, no fence): %v", acme["t.hang"])
	}
	if _, ok := refund["residual_risk"]; ok {
		t.Fatalf("t.refund states a risk: %v", refund)
	}
}

// inDoubt sends a request for a key whose call times out (300 ms) until
// the answer says pending: on a slow machine the first wait may end
// before the call even started (status running); a retry of a key in
// doubt is answered pending at once.
func inDoubt(t *testing.T, send func() gwResp) gwResp {
	t.Helper()
	var r gwResp
	for i := 0; i < 10; i++ {
		if r = send(); r.str("status") == "pending" {
			return r
		}
	}
	t.Fatalf("the key never came in doubt: %s", r.raw)
	return r
}
