package main

import (
	"context"
	"strings"
	"testing"

	"github.com/atmostonce/toolexec/tools"
)

// demoRegistry is a fresh set of demo tools: a new registry stands for a
// restarted process.
func demoRegistry(t *testing.T) *tools.Registry {
	t.Helper()
	reg, err := demoTools()
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// invokeDemo calls tool with downstreamKey and returns its result; a
// lost answer (demo.lost_refund's first) is asked for again with the same
// key, as the reconciler does.
func invokeDemo(t *testing.T, reg *tools.Registry, tool, downstreamKey string) map[string]any {
	t.Helper()
	_, tl, ok := reg.Lookup(tool)
	if !ok {
		t.Fatalf("no %s", tool)
	}
	req := tools.Request{Tool: tool, DownstreamKey: downstreamKey, Args: map[string]any{"amount": 5}}
	out := tl.Invoke(context.Background(), req)
	if out.Status == tools.Unknown {
		out = tl.Invoke(context.Background(), req)
	}
	res, _ := out.Result.(map[string]any)
	if res == nil {
		t.Fatalf("%s: %+v", tool, out)
	}
	return res
}

// A restart (a new registry) must not hand a new key the id that an old
// key's replay carries: ids come from the call's downstream key.
func TestDemoIDsAreUniqueAcrossRestarts(t *testing.T) {
	before, after := demoRegistry(t), demoRegistry(t)
	for _, c := range []struct{ tool, field, prefix string }{{"demo.refund", "refund_id", "rf_"}, {"demo.lost_refund", "refund_id", "rf_lost_"}} {
		old := invokeDemo(t, before, c.tool, "tk2_old")[c.field].(string)
		fresh := invokeDemo(t, after, c.tool, "tk2_new")[c.field].(string)
		again := invokeDemo(t, after, c.tool, "tk2_old")[c.field].(string)
		if old == fresh || old != again || !strings.HasPrefix(old, c.prefix) || !strings.HasPrefix(fresh, c.prefix) {
			t.Errorf("%s: old key %s, new key after a restart %s, old key after a restart %s", c.tool, old, fresh, again)
		}
	}
}

// demo.echo's "call" counts runs of one call: 1 for every first run, in
// every process, and 2 only if the body ran twice for the same call.
func TestDemoEchoCountsRunsPerCall(t *testing.T) {
	reg, restarted := demoRegistry(t), demoRegistry(t)
	calls := []int64{
		invokeDemo(t, reg, "demo.echo", "tk2_a")["call"].(int64),
		invokeDemo(t, reg, "demo.echo", "tk2_b")["call"].(int64),
		invokeDemo(t, restarted, "demo.echo", "tk2_c")["call"].(int64),
		invokeDemo(t, reg, "demo.echo", "tk2_a")["call"].(int64),
	}
	if calls[0] != 1 || calls[1] != 1 || calls[2] != 1 || calls[3] != 2 {
		t.Fatalf("calls %v, want [1 1 1 2]", calls)
	}
}
