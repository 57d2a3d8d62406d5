package executor

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
)

// job is a call whose started event (if it has one) is committed.
type job struct {
	call      saga.Call
	partition int32
	rk        string
	epoch     uint64 // the ownership epoch of partition at dispatch
}

// completion is a finished call, handed from its goroutine to the loop.
type completion struct {
	job     job
	outcome tools.Outcome
	dur     time.Duration
}

// dispatcher runs calls with bounded concurrency: at most maxInFlight in
// all, and at most each tool's MaxInFlight per tool. Jobs beyond the
// bounds wait in a FIFO that the loop keeps bounded by pausing its polls.
// Each running call has one goroutine, and there are never more of them
// than maxInFlight.
type dispatcher struct {
	reg         *tools.Registry
	maxInFlight int
	hooks       Hooks
	ctx         context.Context // parent of every call; cancelled when a drain times out
	out         chan completion
	wake        func()
	wg          sync.WaitGroup

	mu struct {
		sync.Mutex
		running int
		perTool map[string]int
		limits  map[string]int // tool -> max_in_flight, cached
		queue   []job
	}
}

func newDispatcher(ctx context.Context, reg *tools.Registry, maxInFlight int, hooks Hooks, wake func()) *dispatcher {
	d := &dispatcher{reg: reg, maxInFlight: maxInFlight, hooks: hooks, ctx: ctx,
		out: make(chan completion, maxInFlight), wake: wake}
	d.mu.perTool = map[string]int{}
	d.mu.limits = map[string]int{}
	return d
}

// submit queues jobs and starts those the bounds allow. Never blocks.
func (d *dispatcher) submit(jobs ...job) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.mu.queue = append(d.mu.queue, jobs...)
	d.startRunnableLocked()
}

// queued is the number of jobs waiting for a slot plus those running.
func (d *dispatcher) queued() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.mu.queue) + d.mu.running
}

func (d *dispatcher) startRunnableLocked() {
	if d.mu.running >= d.maxInFlight || len(d.mu.queue) == 0 {
		return // nothing can start: skip the scan (it ran on every completion)
	}
	kept := d.mu.queue[:0]
	for _, j := range d.mu.queue {
		if d.mu.running >= d.maxInFlight || !d.toolHasRoomLocked(j.call.Tool) {
			kept = append(kept, j)
			continue
		}
		d.mu.running++
		d.mu.perTool[j.call.Tool]++
		d.wg.Add(1)
		go d.run(j)
	}
	clear(d.mu.queue[len(kept):])
	d.mu.queue = kept
}

func (d *dispatcher) toolHasRoomLocked(tool string) bool {
	limit, ok := d.mu.limits[tool]
	if !ok {
		spec, _, found := d.reg.Lookup(tool)
		limit = spec.MaxInFlight
		if !found {
			limit = 0
		}
		d.mu.limits[tool] = limit // the registry is fixed after start: look each tool up once
	}
	return limit <= 0 || d.mu.perTool[tool] < limit
}

func (d *dispatcher) run(j job) {
	defer d.wg.Done()
	start := time.Now()
	d.hooks.at(PointDuringCall, j.rk)
	out := d.invoke(j)
	d.hooks.at(PointAfterCall, j.rk)
	d.out <- completion{job: j, outcome: out, dur: time.Since(start)}
	d.wake()
	d.mu.Lock()
	d.mu.running--
	d.mu.perTool[j.call.Tool]--
	d.startRunnableLocked()
	d.mu.Unlock()
}

func (d *dispatcher) invoke(j job) tools.Outcome {
	_, tool, ok := d.reg.Lookup(j.call.Tool)
	if !ok {
		// Unreachable unless the registry lost a tool: nothing was sent.
		return tools.Outcome{Status: tools.NotExecuted, Code: "unknown_tool", Message: "tool " + j.call.Tool + " is not registered"}
	}
	args, err := decodeArgs(j.call.Args)
	if err != nil {
		return tools.Outcome{Status: tools.NotExecuted, Code: "bad_args", Message: err.Error()}
	}
	req := tools.Request{
		Tenant: j.call.Tenant, Key: j.call.Key, Tool: j.call.Tool, Args: args, Traceparent: j.call.Traceparent,
		DownstreamKey: tools.DownstreamKey(j.call.Tenant, j.call.Tool, j.call.Key),
	}
	return tool.Invoke(d.ctx, req)
}

func decodeArgs(b []byte) (map[string]any, error) {
	if len(b) == 0 {
		return map[string]any{}, nil
	}
	var m map[string]any
	if err := msgpack.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("executor: decode canonical args: %w", err)
	}
	return m, nil
}

// wait blocks until every running call returned or ctx is done.
func (d *dispatcher) wait(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { d.wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// cancelQueued removes and returns the jobs that have not started.
func (d *dispatcher) cancelQueued() []job {
	d.mu.Lock()
	defer d.mu.Unlock()
	q := d.mu.queue
	d.mu.queue = nil
	return q
}
