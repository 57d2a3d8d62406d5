package executor

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
)

// The dispatcher never runs more calls than the overall bound, nor more of
// one tool than its max_in_flight, and every submitted job completes once.
func TestDispatcherBounds(t *testing.T) {
	reg := tools.NewRegistry()
	var mu sync.Mutex
	running := map[string]int{}
	maxSeen := map[string]int{}
	var total, maxTotal atomic.Int32
	slow := func(ctx context.Context, r tools.Request) tools.Outcome {
		mu.Lock()
		running[r.Tool]++
		maxSeen[r.Tool] = max(maxSeen[r.Tool], running[r.Tool])
		mu.Unlock()
		n := total.Add(1)
		for {
			m := maxTotal.Load()
			if n <= m || maxTotal.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(20 * time.Millisecond)
		total.Add(-1)
		mu.Lock()
		running[r.Tool]--
		mu.Unlock()
		return tools.Outcome{Status: tools.Succeeded, Attempts: 1}
	}
	for _, name := range []string{"a", "b"} {
		spec := tools.Spec{Name: name, Class: tools.NativeKey, Timeout: time.Second, PendingTTL: time.Minute, Retention: time.Hour, MaxInFlight: 2}
		if err := reg.Register(spec, tools.Func(slow)); err != nil {
			t.Fatal(err)
		}
	}
	d := newDispatcher(context.Background(), reg, 3, Hooks{}, func() {})
	const jobs = 20
	for i := 0; i < jobs; i++ {
		tool := "a"
		if i%3 == 0 {
			tool = "b"
		}
		d.submit(job{call: saga.Call{Kind: saga.CallOriginal, Tenant: "t", Key: string(rune('A' + i)), Tool: tool, CallID: "c"}, rk: string(rune('A' + i))})
	}
	for i := 0; i < jobs; i++ {
		select {
		case c := <-d.out:
			if c.outcome.Status != tools.Succeeded {
				t.Fatalf("job %s: %+v", c.job.rk, c.outcome)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("only %d of %d jobs completed", i, jobs)
		}
	}
	if maxTotal.Load() > 3 {
		t.Fatalf("%d calls ran at once, the bound is 3", maxTotal.Load())
	}
	for tool, n := range maxSeen {
		if n > 2 {
			t.Fatalf("tool %s ran %d at once, its max_in_flight is 2", tool, n)
		}
	}
	// A call frees its slot just after it sends its completion.
	for deadline := time.Now().Add(time.Second); d.queued() != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if d.queued() != 0 {
		t.Fatalf("queued after completion: %d", d.queued())
	}
}

// Jobs still queued when a drain starts never reached their tool.
func TestDispatcherCancelQueued(t *testing.T) {
	reg := tools.NewRegistry()
	release := make(chan struct{})
	block := func(ctx context.Context, r tools.Request) tools.Outcome {
		<-release
		return tools.Outcome{Status: tools.Succeeded, Attempts: 1}
	}
	spec := tools.Spec{Name: "a", Class: tools.NativeKey, Timeout: time.Second, PendingTTL: time.Minute, Retention: time.Hour, MaxInFlight: 1}
	if err := reg.Register(spec, tools.Func(block)); err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(context.Background(), reg, 8, Hooks{}, func() {})
	for i := 0; i < 3; i++ {
		d.submit(job{call: saga.Call{Tool: "a", Key: string(rune('A' + i))}, rk: string(rune('A' + i))})
	}
	if got := len(d.cancelQueued()); got != 2 {
		t.Fatalf("cancelled %d queued jobs, want 2 (one runs)", got)
	}
	close(release)
	<-d.out
	for deadline := time.Now().Add(time.Second); d.queued() != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if d.queued() != 0 {
		t.Fatalf("queued after drain: %d", d.queued())
	}
}
