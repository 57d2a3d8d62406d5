package integration

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/vfs"
	"github.com/cockroachdb/pebble/vfs/errorfs"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor"
	"github.com/atmostonce/toolexec/state"
	"github.com/atmostonce/toolexec/wire"
)

// TestViewWriteFailureStopsTheMember: the member's disk refuses the Pebble
// log's writes (a full disk; errorfs) when a tick has just committed a
// call's started event (or, by timing, a tick before it). The tick
// dispatches the call, then its view write fails: the member stops (ErrFatal, state.ErrBroken) and decides nothing
// more on a view it could not write (no answer to the intent from it, no
// further tool request). That is the crash window after a started commit:
// the next member (a restart on a healthy disk) finds the key in doubt in
// the log, answers a duplicate pending, and the reconciler settles it
// under the call's downstream key. The tool sees one downstream key for
// the intent (one effect), and the intent gets its one terminal answer.
func TestViewWriteFailureStopsTheMember(t *testing.T) {
	e := newEnv(t, 2)
	l := newLedger(t)
	reg := registry(t, l.toolsYAML(toolEntry("t.okttl", "native_key", l.url("/ok"), "1s", "    pending_ttl: 3s\n")))
	var full atomic.Bool
	fs := errorfs.Wrap(vfs.Default, errorfs.InjectorFunc(func(op errorfs.Op, path string) error {
		if full.Load() && op == errorfs.OpFileWrite && strings.HasSuffix(path, ".log") {
			return errorfs.ErrInjected
		}
		return nil
	}))
	cfg := e.inprocConfig(reg)
	cfg.StateFS = fs
	ex, err := newExecutor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ex.Run(t.Context()) }()
	c := e.client()
	// A call on each partition first: both are restored, so the first
	// view write after the fault is the next call's tick.
	for p := int32(0); p < e.partitions; p++ {
		key := keyOn(e, "disk-a", p)
		if res := e.call(c, wire.Intent{Tool: "t.ok", Key: key, Args: map[string]any{}}, time.Minute); res.Status != codes.StatusSucceeded {
			t.Fatalf("before the fault: %+v", res)
		}
	}
	results := e.collect(e.names.Results)
	full.Store(true)
	in := wire.Intent{Tool: "t.okttl", Key: "disk-b", Args: map[string]any{"n": 1}}
	id := e.send(in)
	select {
	case err := <-done:
		t.Logf("the member stopped: %v", err)
		if !errors.Is(err, executor.ErrFatal) || !errors.Is(err, state.ErrBroken) || !strings.Contains(err.Error(), "the view cannot be written") {
			t.Fatalf("Run ended with %v, want ErrFatal and state.ErrBroken from the tick's view write", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("the member still runs a minute after its view could not be written")
	}
	ex.Close()
	before := map[string]bool{}
	for _, k := range l.downstreamKeys() {
		before[k] = true
	}
	stopped := l.total()
	if stopped < int(e.partitions) || stopped > int(e.partitions)+1 {
		t.Fatalf("tool requests %d when the member stopped, want %d (disk-b not reached) or %d (dispatched once before the view write)",
			stopped, e.partitions, e.partitions+1)
	}
	time.Sleep(2 * time.Second) // a stopped member that still decided would call or answer by now
	if n := l.total(); n != stopped {
		t.Fatalf("tool requests went from %d to %d after the member stopped", stopped, n)
	}
	if rs := results.results(id); len(rs) != 0 {
		t.Fatalf("the stopped member answered disk-b's intent: %+v", rs)
	}
	full.Store(false)
	e.startInproc(reg, func(c *executorConfig) { c.DataDir = cfg.DataDir })
	// The new member joins the group and restores first; its first answer
	// to the duplicate (however long that takes) depends on which write the
	// full disk refused first. If disk-b's started event committed before
	// the stop, the key is in doubt: pending, and the reconciler settles it.
	// If an earlier write failed (a tick before disk-b's), nothing of disk-b
	// was recorded and the new member decides it: the duplicate replays its
	// outcome, and the tool saw disk-b exactly once.
	dup := firstAnswer(t, c, in, time.Minute)
	if dup.OriginalIntentID != id {
		t.Fatalf("the duplicate's answer names %q, want the first intent (%s): %+v", dup.OriginalIntentID, id, dup)
	}
	switch {
	case dup.Status == codes.StatusPending:
	case dup.Status == codes.StatusSucceeded && dup.WasReplay:
		if n := l.total(); n != int(e.partitions)+1 {
			t.Fatalf("disk-b decided by the new member, yet the tool saw %d requests, want %d (disk-b once)", n, e.partitions+1)
		}
	default:
		t.Fatalf("the duplicate's first answer: %+v, want pending (in doubt) or a replay of the new member's outcome", dup)
	}
	e.startReconciler(reg, "", nil)
	res := results.waitResult(t, id, 2*time.Minute)
	if res.Status != codes.StatusSucceeded {
		t.Fatalf("disk-b, settled: %+v", res)
	}
	time.Sleep(2 * time.Second) // a second answer would be here by now
	terminal := 0
	for _, r := range results.results(id) {
		if codes.Terminal(r.Status) {
			terminal++
		}
	}
	if terminal != 1 {
		t.Fatalf("%d terminal answers to disk-b's intent, want 1: %+v", terminal, results.results(id))
	}
	var fresh []string
	for _, k := range l.downstreamKeys() {
		if !before[k] {
			fresh = append(fresh, k)
		}
	}
	if keys := l.downstreamKeys(); len(keys) != int(e.partitions)+1 {
		t.Fatalf("the tool was called under %d downstream keys, want %d (disk-b under one: one effect): %v (new after the stop: %v)",
			len(keys), e.partitions+1, keys, fresh)
	}
	t.Logf("tool requests: %d when the member stopped, %d in all", stopped, l.total())
}

// firstAnswer sends in and returns its first answer, terminal or not.
func firstAnswer(t *testing.T, c *client.Client, in wire.Intent, within time.Duration) *wire.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	p, err := c.Start(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	res, err := p.Next(ctx)
	if err != nil {
		t.Fatalf("no answer to %s within %s: %v", in.Key, within, err)
	}
	return res
}

// keyOn is the first key prefix-<i> that routes to partition p of e.
func keyOn(e *env, prefix string, p int32) string {
	for i := 0; ; i++ {
		k := prefix + "-" + strconv.Itoa(i)
		if wire.Partition(wire.RoutingKey(wire.DefaultTenant, k), e.partitions) == p {
			return k
		}
	}
}
