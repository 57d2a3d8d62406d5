package integration

import (
	"sync"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// Test 1: a duplicate after completion gives one call; the second answer
// is a replay that names the original.
func TestReplayAfterCompletion(t *testing.T) {
	e := newEnv(t, 3)
	l := newLedger(t)
	e.startInproc(registry(t, l.toolsYAML("")), nil)
	c := e.client()
	args := map[string]any{"order": "o-1", "amount": 120}
	first := e.call(c, wire.Intent{Tool: "t.ok", Key: "refund-1", Args: args}, 30*time.Second)
	second := e.call(c, wire.Intent{Tool: "t.ok", Key: "refund-1", Args: args}, 30*time.Second)
	if first.Status != codes.StatusSucceeded || first.WasReplay {
		t.Fatalf("first: %+v", first)
	}
	if second.Status != codes.StatusSucceeded || !second.WasReplay {
		t.Fatalf("second should be a replay: %+v", second)
	}
	if second.OriginalIntentID != first.IntentID || second.OriginalCalledAt == 0 || second.OriginalCalledAt != first.OriginalCalledAt {
		t.Fatalf("replay must name the original: first %+v second %+v", first, second)
	}
	if l.total() != 1 {
		t.Fatalf("tool called %d times, want 1", l.total())
	}
}

// Test 2: a duplicate while the first is in flight is coalesced: one
// call, both intents answered with the same outcome.
func TestCoalesceInFlight(t *testing.T) {
	e := newEnv(t, 3)
	l := newLedger(t)
	e.startInproc(registry(t, l.toolsYAML("")), nil)
	c := e.client()
	in := wire.Intent{Tool: "t.block", Key: "deploy-7", Args: map[string]any{"service": "api"}}
	var wg sync.WaitGroup
	answers := make([]*wire.Result, 2)
	wg.Add(1)
	go func() { defer wg.Done(); answers[0] = e.call(c, in, 60*time.Second) }()
	l.waitArrivals(t, 1, 30*time.Second)
	wg.Add(1)
	go func() { defer wg.Done(); answers[1] = e.call(c, in, 60*time.Second) }()
	time.Sleep(time.Second) // the duplicate is decided while the call blocks
	l.releaseAll()
	wg.Wait()
	if l.total() != 1 {
		t.Fatalf("tool called %d times, want 1", l.total())
	}
	for i, a := range answers {
		if a.Status != codes.StatusSucceeded {
			t.Fatalf("answer %d: %+v", i, a)
		}
	}
	if answers[0].WasReplay == answers[1].WasReplay {
		t.Fatalf("exactly one answer is the original: %+v / %+v", answers[0], answers[1])
	}
}

// Test 3: same key with other arguments is a conflict and calls nothing;
// canonical arguments make key order and 120 vs 120.0 one call.
func TestConflictAndCanonicalArgs(t *testing.T) {
	e := newEnv(t, 3)
	l := newLedger(t)
	e.startInproc(registry(t, l.toolsYAML("")), nil)
	res := e.collect(e.names.Results)
	rk := wire.RoutingKey("acme", "pay-9")
	// Three encodings of the same arguments: key order and number types differ.
	encodings := []map[string]any{
		{"v": 1, "type": "call", "id": "i1", "tenant": "acme", "key": "pay-9", "tool": "t.ok", "args": map[string]any{"amount": 120, "currency": "EUR"}},
		{"v": 1, "type": "call", "id": "i2", "tenant": "acme", "key": "pay-9", "tool": "t.ok", "args": map[string]any{"currency": "EUR", "amount": 120.0}},
		{"v": 1, "type": "call", "id": "i3", "tenant": "acme", "key": "pay-9", "tool": "t.ok", "args": map[string]any{"currency": "EUR", "amount": float32(120)}},
	}
	for i, m := range encodings {
		e.produceRaw(e.names.Intents, -1, rk, mustMsgpack(t, m))
		got := res.waitResult(t, m["id"].(string), 30*time.Second)
		if got.Status != codes.StatusSucceeded || got.WasReplay != (i > 0) {
			t.Fatalf("encoding %d: %+v", i, got)
		}
	}
	conflict := map[string]any{"v": 1, "type": "call", "id": "i4", "tenant": "acme", "key": "pay-9", "tool": "t.ok", "args": map[string]any{"currency": "EUR", "amount": 121}}
	e.produceRaw(e.names.Intents, -1, rk, mustMsgpack(t, conflict))
	got := res.waitResult(t, "i4", 30*time.Second)
	if got.Status != codes.StatusConflict || got.Error == nil || got.Error.Code != "args_mismatch" || got.OriginalIntentID != "i1" {
		t.Fatalf("want conflict naming i1, got %+v", got)
	}
	if l.total() != 1 {
		t.Fatalf("tool called %d times, want 1", l.total())
	}
}

// Test 9: tool outcomes. A 4xx is a definite failure, replayed as failed;
// a refused connection is retried and then not_executed; a timeout after
// the request was sent is unknown, so the key is in doubt.
func TestToolOutcomes(t *testing.T) {
	e := newEnv(t, 3)
	l := newLedger(t)
	e.startInproc(registry(t, l.toolsYAML("")), nil)
	c := e.client()
	failed := e.call(c, wire.Intent{Tool: "t.fail", Key: "f1", Args: map[string]any{}}, 30*time.Second)
	replayed := e.call(c, wire.Intent{Tool: "t.fail", Key: "f1", Args: map[string]any{}}, 30*time.Second)
	if failed.Status != codes.StatusFailed || failed.Error == nil || failed.Error.Code != "http_400" {
		t.Fatalf("4xx: %+v", failed)
	}
	if replayed.Status != codes.StatusFailed || !replayed.WasReplay {
		t.Fatalf("4xx replay: %+v", replayed)
	}
	refused := e.call(c, wire.Intent{Tool: "t.refused", Key: "r1", Args: map[string]any{}}, 30*time.Second)
	if refused.Status != codes.StatusNotExecuted {
		t.Fatalf("refused connection: %+v", refused)
	}
	pending := e.callPending(c, wire.Intent{Tool: "t.hang", Key: "h1", Args: map[string]any{}}, 5*time.Second)
	if pending.Error == nil || pending.Error.Code != "in_doubt" {
		t.Fatalf("timeout: %+v", pending)
	}
	dup := e.callPending(c, wire.Intent{Tool: "t.hang", Key: "h1", Args: map[string]any{}}, 3*time.Second)
	if !dup.WasReplay || dup.OriginalIntentID != pending.IntentID {
		t.Fatalf("duplicate of a key in doubt: %+v", dup)
	}
	if n := l.total(); n != 2 { // one 400, one hang; the refused tool has no server
		t.Fatalf("tool requests %d, want 2", n)
	}
}
