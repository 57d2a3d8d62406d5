package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/wire"
)

// Test 7: an intent produced on purpose to the wrong partition is
// forwarded to its owner and executed once.
func TestWrongPartitionIsForwarded(t *testing.T) {
	e := newEnv(t, 4)
	l := newLedger(t)
	e.startInproc(registry(t, l.toolsYAML("")), nil)
	res := e.collect(e.names.Results)
	for i := 0; i < 4; i++ {
		key := "fw-" + randHex(3)
		rk := wire.RoutingKey("default", key)
		wrong := (wire.Partition(rk, e.partitions) + 1) % e.partitions
		id := "fw" + randHex(4)
		in := map[string]any{"v": 1, "type": "call", "id": id, "key": key, "tool": "t.ok", "args": map[string]any{"i": i}}
		e.produceRaw(e.names.Intents, wrong, rk, mustMsgpack(t, in))
		got := res.waitResult(t, id, 30*time.Second)
		if got.Status != codes.StatusSucceeded || got.WasReplay {
			t.Fatalf("forwarded intent: %+v", got)
		}
	}
	time.Sleep(500 * time.Millisecond)
	if k, n := l.maxPerKey(); n != 1 || l.total() != 4 {
		t.Fatalf("want 4 keys called once each, got total %d, max %d for %s", l.total(), n, k)
	}
}

// Test 8: a resolve forged on tool.intents and every kind of bad input is
// rejected with its reason and dead-lettered, and the partition goes on
// serving valid intents.
func TestBadInputIsRejectedAndDeadLettered(t *testing.T) {
	e := newEnv(t, 1) // one partition: everything below shares it
	l := newLedger(t)
	e.startInproc(registry(t, l.toolsYAML("")), nil)
	res := e.collect(e.names.Results)
	dlq := e.collect(e.names.DeadLetter)
	call := func(id string, mod func(m map[string]any)) map[string]any {
		m := map[string]any{"v": 1, "type": "call", "id": id, "tenant": "acme", "key": "k-" + id, "tool": "t.ok", "args": map[string]any{"x": 1}}
		if mod != nil {
			mod(m)
		}
		return m
	}
	cases := []struct {
		id, reason string
		rk         string
		value      []byte
	}{
		{"", codes.ReasonUndecodable, "acme/garbage", []byte{0xc1, 0xff, 0x00, 'z'}},
		{"b-noid", codes.ReasonMissingField, "acme/k-b-noid", mustMsgpack(t, call("", func(m map[string]any) { delete(m, "id"); m["key"] = "k-b-noid" }))},
		{"b-nokey", codes.ReasonMissingField, "acme/", mustMsgpack(t, call("b-nokey", func(m map[string]any) { delete(m, "key") }))},
		{"b-tool", codes.ReasonUnknownTool, "acme/k-b-tool", mustMsgpack(t, call("b-tool", func(m map[string]any) { m["tool"] = "no.such.tool" }))},
		{"b-big", codes.ReasonOversized, "acme/k-b-big", mustMsgpack(t, call("b-big", func(m map[string]any) {
			m["tool"] = "t.small"
			m["args"] = map[string]any{"blob": strings.Repeat("x", 200)}
		}))},
		{"b-tenant", codes.ReasonWrongTenant, "other/k-b-tenant", mustMsgpack(t, call("b-tenant", nil))},
		{"b-v2", codes.ReasonUnsupportedVersion, "acme/k-b-v2", mustMsgpack(t, call("b-v2", func(m map[string]any) { m["v"] = 2 }))},
		{"b-resolve", codes.ReasonResolveOnIntents, "acme/k-b-resolve", mustMsgpack(t, call("b-resolve", func(m map[string]any) { m["type"] = "resolve"; m["outcome"] = "succeeded" }))},
		{"b-reply", codes.ReasonBadReplyTo, "acme/k-b-reply", mustMsgpack(t, call("b-reply", func(m map[string]any) { m["reply_to"] = e.names.Events }))},
	}
	for _, c := range cases {
		e.produceRaw(e.names.Intents, 0, c.rk, c.value)
	}
	good := call("good", nil)
	e.produceRaw(e.names.Intents, 0, "acme/k-good", mustMsgpack(t, good))
	if got := res.waitResult(t, "good", 30*time.Second); got.Status != codes.StatusSucceeded {
		t.Fatalf("a valid intent after bad input: %+v", got)
	}
	for _, c := range cases {
		if c.id != "" && c.id != "b-noid" {
			got := res.waitResult(t, c.id, 10*time.Second)
			if got.Status != codes.StatusRejected || got.Error == nil || got.Error.Code != c.reason {
				t.Errorf("%s: want rejected/%s, got %+v", c.id, c.reason, got)
			}
		}
		if !hasDeadLetter(dlq, c.rk, c.reason) {
			t.Errorf("%s: no dead letter with reason %s (have %v)", c.id, c.reason, reasons(dlq))
		}
	}
	if l.total() != 1 {
		t.Fatalf("tool requests %d, want 1 (only the valid intent)", l.total())
	}
}

func hasDeadLetter(c *collector, rk, reason string) bool {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range c.records() {
			d, err := wire.DecodeDeadLetter(r.Value)
			if err == nil && d.Reason == reason && string(r.Key) == rk && len(d.Value) > 0 {
				return true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

func reasons(c *collector) []string {
	var out []string
	for _, d := range c.deadLetters() {
		out = append(out, d.Reason+":"+d.Key)
	}
	return out
}

var _ = kgo.RecordHeader{}
