package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/wire"
)

// Test 4: the crash window. The owner dies after the started event is
// committed and before the outcome is. The next owner must not call: the
// key is in doubt and a duplicate is answered pending.
func TestCrashWindowLeavesKeyInDoubt(t *testing.T) {
	for _, point := range []string{"after_started_commit", "after_call", "during_outcome_commit"} {
		t.Run(point, func(t *testing.T) {
			e := newEnv(t, 2)
			l := newLedger(t)
			yaml := l.toolsYAML("")
			a := e.startProc(yaml, "", "TOOLEXEC_FAULT="+point+":exit:crash-me")
			c := e.client()
			in := wire.Intent{Tool: "t.irrev", Key: "crash-me", Args: map[string]any{"amount": 10}}
			go func() { _, _ = c.Call(t.Context(), in) }()
			a.exited(t, 30*time.Second)
			called := l.total()
			if point == "after_started_commit" && called != 0 || point != "after_started_commit" && called != 1 {
				t.Fatalf("tool requests before the crash: %d", called)
			}
			e.startProc(yaml, "")
			dup := e.callPending(c, in, 8*time.Second)
			if !dup.WasReplay || dup.OriginalIntentID == "" {
				t.Fatalf("duplicate after the crash: %+v", dup)
			}
			if l.total() != called {
				t.Fatalf("the next owner called the tool: %d requests, had %d", l.total(), called)
			}
		})
	}
}

// Test 5: a zombie. The owner is paused (SIGSTOP) in the middle of a call,
// the group moves the partition to the other member, the owner wakes up:
// it never commits the outcome itself (its transaction is fenced by the
// generation, or it learns first that it lost the partition), and the
// downstream sees one call in total. What it knows still reaches the new
// owner: the outcome, kept as a fact, settles the key (a resolve by the
// executor naming the call's attempt).
func TestZombieIsFenced(t *testing.T) {
	e := newEnv(t, 1) // one partition: exactly one owner at a time
	l := newLedger(t)
	yaml := l.toolsYAML("")
	procs := map[string]*proc{}
	for _, name := range []string{"A", "B"} {
		procs[name] = e.startNamedProc(name, yaml, "")
	}
	c := e.client()
	ownerID := e.owner(0, 2, 30*time.Second)
	owner := procs[ownerID]
	in := wire.Intent{Tool: "t.block", Key: "zombie-1", Args: map[string]any{"n": 1}}
	go func() { _, _ = c.Call(t.Context(), in) }()
	l.waitArrivals(t, 1, 30*time.Second)
	owner.signal(syscall.SIGSTOP)
	if next := e.owner(0, 1, 30*time.Second); next == ownerID {
		t.Fatalf("the paused member %s still owns the partition", ownerID)
	}
	dup := e.callPending(c, in, 8*time.Second)
	if dup.OriginalIntentID == "" {
		t.Fatalf("the new owner's answer: %+v", dup)
	}
	l.releaseAll() // the zombie's request now has its answer waiting in the socket
	owner.signal(syscall.SIGCONT)
	// The group may still be rebalancing around the zombie; the key settles
	// once its fact reaches the owner.
	if res := e.call(c, in, 90*time.Second); res.Status != codes.StatusSucceeded {
		t.Fatalf("the duplicate once the zombie woke: %+v", res)
	}
	byFact := false
	for _, ev := range history(t, e, "default", "zombie-1") {
		switch {
		case ev.Kind == saga.EvOutcome && ev.Status != saga.StatusUnknown:
			t.Fatalf("a zombie's outcome was committed: %+v", ev)
		case ev.Kind == saga.EvResolved && ev.By == "executor" && ev.Status == saga.StatusSucceeded:
			byFact = true
		}
	}
	if !byFact {
		t.Fatal("the zombie's outcome never reached the key's owner as a fact")
	}
	if n := l.total(); n != 1 {
		t.Fatalf("tool requests %d, want 1", n)
	}
	if !strings.Contains(owner.output(), "outcome not recorded") {
		t.Fatalf("the zombie never noticed it lost its call's partition:\n%s", owner.output())
	}
}

// Test 6: deleting the Pebble directory and restarting rebuilds the state
// from the event log; duplicates still replay.
func TestStateRebuiltFromLog(t *testing.T) {
	e := newEnv(t, 3)
	l := newLedger(t)
	reg := registry(t, l.toolsYAML(""))
	p := e.startInproc(reg, nil)
	c := e.client()
	var first []*wire.Result
	for i := 0; i < 10; i++ {
		first = append(first, e.call(c, wire.Intent{Tool: "t.ok", Key: "rb-" + string(rune('a'+i)), Args: map[string]any{"i": i}}, 30*time.Second))
	}
	p.stop()
	if err := os.RemoveAll(filepath.Join(p.dir, "state")); err != nil {
		t.Fatal(err)
	}
	e.startInproc(reg, func(cfg *executorConfig) { cfg.DataDir = p.dir })
	for i := 0; i < 10; i++ {
		got := e.call(c, wire.Intent{Tool: "t.ok", Key: "rb-" + string(rune('a'+i)), Args: map[string]any{"i": i}}, 30*time.Second)
		if !got.WasReplay || got.OriginalIntentID != first[i].IntentID {
			t.Fatalf("key %d after the rebuild: %+v", i, got)
		}
	}
	if l.total() != 10 {
		t.Fatalf("tool requests %d, want 10", l.total())
	}
}

// Test 11: SIGTERM while calls run drains them and records their outcomes:
// nothing is left in doubt.
func TestSigtermDrainsCalls(t *testing.T) {
	e := newEnv(t, 2)
	l := newLedger(t)
	yaml := l.toolsYAML("")
	dir := t.TempDir()
	a := e.startProc(yaml, dir)
	c := e.client()
	keys := []string{"term-1", "term-2", "term-3", "term-4", "term-5"}
	for _, k := range keys {
		go func() { _, _ = c.Call(t.Context(), wire.Intent{Tool: "t.slow", Key: k, Args: map[string]any{}}) }()
	}
	l.waitArrivals(t, len(keys), 30*time.Second)
	a.signal(syscall.SIGTERM)
	a.exited(t, 20*time.Second)
	e.startProc(yaml, dir)
	for _, k := range keys {
		got := e.call(c, wire.Intent{Tool: "t.slow", Key: k, Args: map[string]any{}}, 20*time.Second)
		if got.Status != codes.StatusSucceeded || !got.WasReplay {
			t.Fatalf("%s after SIGTERM: %+v", k, got)
		}
	}
	if l.total() != len(keys) {
		t.Fatalf("tool requests %d, want %d", l.total(), len(keys))
	}
}

// A read-only call keeps no record and its intent's offset is committed
// when the call starts, so a shutdown must still answer it: the drain
// waits for read-only calls too. (Regression: the chaos harness saw
// read-only intents lose their answer on every restart.)
func TestSigtermAnswersReadOnlyCalls(t *testing.T) {
	e := newEnv(t, 2)
	l := newLedger(t)
	a := e.startProc(l.toolsYAML(""), "")
	c := e.client()
	answers := make(chan *wire.Result, 3)
	for i := 0; i < 3; i++ {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := c.Call(ctx, wire.Intent{Tool: "t.roslow", Key: fmt.Sprintf("ro-%d", i), Args: map[string]any{}})
			if err != nil {
				t.Logf("call ro-%d: %v", i, err)
			}
			answers <- res
		}()
	}
	l.waitArrivals(t, 3, 30*time.Second)
	a.signal(syscall.SIGTERM)
	a.exited(t, 20*time.Second)
	for i := 0; i < 3; i++ {
		res := <-answers
		if res == nil || res.Status != codes.StatusSucceeded {
			t.Fatalf("a read-only call in flight at SIGTERM: %+v", res)
		}
	}
}
