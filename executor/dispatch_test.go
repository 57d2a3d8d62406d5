package executor

import (
	"context"
	"reflect"
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
		d.submit(job{Call: saga.Call{Kind: saga.CallOriginal, Tenant: "t", Key: string(rune('A' + i)), Tool: tool, CallID: "c"}, RK: string(rune('A' + i))})
	}
	for i := 0; i < jobs; i++ {
		select {
		case c := <-d.out:
			if c.outcome.Status != tools.Succeeded {
				t.Fatalf("job %s: %+v", c.job.RK, c.outcome)
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
		d.submit(job{Call: saga.Call{Tool: "a", Key: string(rune('A' + i))}, RK: string(rune('A' + i))})
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

// A revocation takes out the waiting jobs of its partitions only, in
// submission order; the others keep their place, and none of the taken
// ones starts when a slot frees.
func TestDispatcherCancelPartitions(t *testing.T) {
	reg := tools.NewRegistry()
	release := make(chan struct{})
	var mu sync.Mutex
	var ran []string
	block := func(ctx context.Context, r tools.Request) tools.Outcome {
		mu.Lock()
		ran = append(ran, r.Key)
		mu.Unlock()
		<-release
		return tools.Outcome{Status: tools.Succeeded, Attempts: 1}
	}
	spec := tools.Spec{Name: "a", Class: tools.NativeKey, Timeout: time.Second, PendingTTL: time.Minute, Retention: time.Hour, MaxInFlight: 1}
	if err := reg.Register(spec, tools.Func(block)); err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(context.Background(), reg, 8, Hooks{}, func() {})
	for i, p := range []int32{0, 1, 0, 2, 1} {
		k := string(rune('A' + i))
		d.submit(job{Call: saga.Call{Tool: "a", Key: k}, RK: k, P: p})
	}
	var got []string
	for _, j := range d.cancelPartitions([]int32{1, 2}) {
		got = append(got, j.RK)
	}
	if want := []string{"B", "D", "E"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("cancelled %v, want %v (partitions 1 and 2, in order)", got, want)
	}
	if n := d.queued(); n != 2 {
		t.Fatalf("queued %d, want 2 (A running, C waiting)", n)
	}
	close(release)
	for range 2 {
		<-d.out
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"A", "C"}; !reflect.DeepEqual(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}

// A free slot goes to the oldest waiting job whose tool has room: a tool at
// its max_in_flight holds back none of the jobs queued behind its own, and
// among the others the order of submission decides (as with one FIFO for
// all tools). Jobs cancelled by a drain come back in submission order.
func TestDispatcherPerToolQueues(t *testing.T) {
	reg := tools.NewRegistry()
	var mu sync.Mutex
	release := map[string]chan struct{}{}
	gate := func(key string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if release[key] == nil {
			release[key] = make(chan struct{})
		}
		return release[key]
	}
	started := make(chan string, 16)
	call := func(ctx context.Context, r tools.Request) tools.Outcome {
		started <- r.Key
		<-gate(r.Key)
		return tools.Outcome{Status: tools.Succeeded, Attempts: 1}
	}
	for name, limit := range map[string]int{"a": 1, "b": 2, "c": 2} {
		spec := tools.Spec{Name: name, Class: tools.NativeKey, Timeout: time.Second, PendingTTL: time.Minute, Retention: time.Hour, MaxInFlight: limit}
		if err := reg.Register(spec, tools.Func(call)); err != nil {
			t.Fatal(err)
		}
	}
	d := newDispatcher(context.Background(), reg, 3, Hooks{}, func() {})
	submit := func(keys ...string) {
		var jobs []job
		for _, k := range keys {
			jobs = append(jobs, job{Call: saga.Call{Kind: saga.CallOriginal, Tenant: "t", Key: k, Tool: k[:1], CallID: k}, RK: k})
		}
		d.submit(jobs...)
	}
	expect := func(step string, want ...string) {
		t.Helper()
		got := map[string]bool{}
		for range want {
			select {
			case k := <-started:
				got[k] = true
			case <-time.After(5 * time.Second):
				t.Fatalf("%s: started %v, want %v", step, got, want)
			}
		}
		for _, k := range want {
			if !got[k] {
				t.Fatalf("%s: started %v, want %v", step, got, want)
			}
		}
	}
	finish := func(key string) {
		t.Helper()
		close(gate(key))
		select {
		case c := <-d.out:
			if c.job.RK != key {
				t.Fatalf("completion of %s, want %s", c.job.RK, key)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s did not complete", key)
		}
	}

	// The key's first letter is its tool. a allows 1 call, b and c 2, and
	// 3 run at once in all.
	submit("a1", "a2", "a3", "b1", "c1", "b2", "c2")
	expect("submit", "a1", "b1", "c1")
	if n := d.queued(); n != 7 {
		t.Fatalf("queued %d, want 7 (4 waiting, 3 running)", n)
	}
	finish("c1")
	expect("c1 done: a is full, b2 is older than c2", "b2")
	finish("a1")
	expect("a1 done: a2 is the oldest", "a2")
	finish("b1")
	expect("b1 done: a is full again, c2 passes a3", "c2")
	finish("a2")
	expect("a2 done", "a3")
	for _, k := range []string{"b2", "c2", "a3"} {
		finish(k)
	}
	select {
	case k := <-started:
		t.Fatalf("%s started twice", k)
	default:
	}
	for deadline := time.Now().Add(time.Second); d.queued() != 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	if n := d.queued(); n != 0 {
		t.Fatalf("queued after completion: %d", n)
	}

	// A drain cancels what waits, in submission order, whatever the tool.
	submit("a4", "a5", "b3", "a6", "c3", "b4", "c4", "b5")
	expect("second submit", "a4", "b3", "c3")
	var ids []string
	for _, j := range d.cancelQueued() {
		ids = append(ids, j.RK)
	}
	if want := []string{"a5", "a6", "b4", "c4", "b5"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("cancelled %v, want %v", ids, want)
	}
	if n := d.queued(); n != 3 {
		t.Fatalf("queued after cancel %d, want the 3 running", n)
	}
	for _, k := range []string{"a4", "b3", "c3"} {
		finish(k)
	}
	submit("b6")
	expect("after a drain the queues work again", "b6")
	finish("b6")
}

// A job of a partition the callbacks released is refused until the loop
// assigns the partition again: the loop may still restore the partition
// and take its reads over, or commit a tick's calls for it, between the
// revocation and its next poll, and none of those calls may start (the
// simulation saw a member resume a released partition's reads after an
// unknown transaction end, and the reads answered twice).
func TestDispatcherRefusesJobsOfReleasedPartitions(t *testing.T) {
	reg := tools.NewRegistry()
	var mu sync.Mutex
	var ran []string
	call := func(ctx context.Context, r tools.Request) tools.Outcome {
		mu.Lock()
		ran = append(ran, r.Key)
		mu.Unlock()
		return tools.Outcome{Status: tools.Succeeded, Attempts: 1}
	}
	spec := tools.Spec{Name: "a", Class: tools.NativeKey, Timeout: time.Second, PendingTTL: time.Minute, Retention: time.Hour}
	if err := reg.Register(spec, tools.Func(call)); err != nil {
		t.Fatal(err)
	}
	d := newDispatcher(context.Background(), reg, 8, Hooks{}, func() {})
	mk := func(k string, p int32) job { return job{Call: saga.Call{Tool: "a", Key: k}, RK: k, P: p} }
	d.cancelPartitions([]int32{1})
	refused := d.submit(mk("A", 0), mk("B", 1), mk("C", 1))
	if len(refused) != 2 || refused[0].RK != "B" || refused[1].RK != "C" {
		t.Fatalf("refused %+v, want B and C (partition 1 was released)", refused)
	}
	<-d.out
	d.grantPartitions([]int32{1})
	if refused := d.submit(mk("D", 1)); len(refused) != 0 {
		t.Fatalf("refused %+v after the partition was assigned again", refused)
	}
	<-d.out
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"A", "D"}; !reflect.DeepEqual(ran, want) {
		t.Fatalf("ran %v, want %v", ran, want)
	}
}

// gatedTool is a tool whose calls each wait for their key's gate, and
// report their keys in the order they started.
type gatedTool struct {
	mu      sync.Mutex
	gates   map[string]chan struct{}
	started chan string
}

func newGatedTool() *gatedTool {
	return &gatedTool{gates: map[string]chan struct{}{}, started: make(chan string, 64)}
}

func (g *gatedTool) gate(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates[key] == nil {
		g.gates[key] = make(chan struct{})
	}
	return g.gates[key]
}

func (g *gatedTool) invoke(ctx context.Context, r tools.Request) tools.Outcome {
	g.started <- r.Key
	<-g.gate(r.Key)
	return tools.Outcome{Status: tools.Succeeded, Attempts: 1}
}

// gatedDispatcher is a dispatcher of 8 slots with one gated tool, slow,
// that runs one call at a time.
func gatedDispatcher(t *testing.T) (*dispatcher, *gatedTool) {
	t.Helper()
	reg := tools.NewRegistry()
	g := newGatedTool()
	spec := tools.Spec{Name: "slow", Class: tools.NativeKey, Timeout: time.Second, PendingTTL: time.Minute, Retention: time.Hour, MaxInFlight: 1}
	if err := reg.Register(spec, tools.Func(g.invoke)); err != nil {
		t.Fatal(err)
	}
	return newDispatcher(context.Background(), reg, 8, Hooks{}, func() {}), g
}

// next returns the key of the next call that starts.
func (g *gatedTool) next(t *testing.T) string {
	t.Helper()
	select {
	case k := <-g.started:
		return k
	case <-time.After(5 * time.Second):
		t.Fatal("no call started")
		return ""
	}
}

// Two tenants share a tool that runs one call at a time: tenant a queued
// ten calls before tenant b's two, yet b's calls start third and fifth
// (b joins the turns behind a, then they alternate), not behind a's ten.
// The queue waits are told per tenant.
func TestDispatcherFairShare(t *testing.T) {
	d, g := gatedDispatcher(t)
	var wmu sync.Mutex
	waits := map[string]int{}
	d.waited = func(tenant string, _ time.Duration) { wmu.Lock(); waits[tenant]++; wmu.Unlock() }
	submit := func(tenant string, keys ...string) {
		var jobs []job
		for _, k := range keys {
			jobs = append(jobs, job{Call: saga.Call{Kind: saga.CallOriginal, Tenant: tenant, Key: k, Tool: "slow", CallID: k}, RK: tenant + "/" + k})
		}
		d.submit(jobs...)
	}
	submit("a", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10")
	submit("b", "b1", "b2")
	var order []string
	for range 12 {
		k := g.next(t)
		order = append(order, k)
		close(g.gate(k))
		<-d.out
	}
	want := []string{"a1", "a2", "b1", "a3", "b2", "a4", "a5", "a6", "a7", "a8", "a9", "a10"}
	if !reflect.DeepEqual(order, want) {
		t.Fatalf("started %v, want %v", order, want)
	}
	wmu.Lock()
	defer wmu.Unlock()
	if waits["a"] != 10 || waits["b"] != 2 {
		t.Fatalf("queue waits told %v, want a=10 b=2", waits)
	}
}

// Three tenants take turns; a tenant whose queue empties leaves the ring
// and comes back at its end; a revocation takes jobs out without moving
// the turn.
func TestDispatcherRoundRobin(t *testing.T) {
	d, g := gatedDispatcher(t)
	submit := func(tenant string, p int32, keys ...string) {
		var jobs []job
		for _, k := range keys {
			jobs = append(jobs, job{Call: saga.Call{Tenant: tenant, Key: k, Tool: "slow", CallID: k}, RK: tenant + "/" + k, P: p})
		}
		d.submit(jobs...)
	}
	expect := func(want string) {
		t.Helper()
		if k := g.next(t); k != want {
			t.Fatalf("started %s, want %s", k, want)
		}
	}
	finish := func(k string) { close(g.gate(k)); <-d.out }
	submit("a", 0, "a1", "a2", "a3")
	submit("b", 0, "b1")
	submit("c", 0, "c1", "c2")
	submit("c", 1, "c3")
	// a1 started at once; b and c joined the turns behind a. A slot goes
	// to the next tenant's oldest job when a call finishes.
	expect("a1")
	finish("a1")
	expect("a2")
	finish("a2")
	expect("b1")
	finish("b1") // b's queue is empty: b leaves the turns
	expect("c1")
	submit("b", 0, "b2") // b comes back behind a and c
	if got := d.cancelPartitions([]int32{1}); len(got) != 1 || got[0].Key != "c3" {
		t.Fatalf("cancelled %v, want c3", got)
	}
	finish("c1")
	for _, k := range []string{"a3", "c2", "b2"} {
		expect(k)
		finish(k)
	}
	if n := d.queued(); n != 0 {
		for deadline := time.Now().Add(time.Second); d.queued() != 0 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		if n = d.queued(); n != 0 {
			t.Fatalf("queued after all ran: %d", n)
		}
	}
}
