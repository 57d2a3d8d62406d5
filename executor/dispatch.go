package executor

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// job is a call whose started event (if it has one) is committed, with
// the partition and ownership epoch it was started under.
type job = partition.Call

// completion is a finished call, handed from its goroutine to the loop.
type completion struct {
	job     job
	outcome tools.Outcome
	dur     time.Duration
	traceID string // the execute_tool span's, when sampled: the duration's exemplar
}

// dispatcher runs calls with bounded concurrency: at most maxInFlight in
// all, and at most each tool's MaxInFlight per tool. Jobs beyond the
// bounds wait in their tool's queue, which the partition core keeps
// bounded (partition/admission.go: a call is refused before it starts
// when its tool or its tenant holds all the places it may).
//
// Each tool's queue is one FIFO per tenant, served in round robin: a free
// slot of the tool goes to the oldest job of the tenant whose turn it is,
// and the turn moves on. So a tenant with one job waits behind at most
// one job of each other tenant of the tool, however many they queued
// (deficit round robin with a quantum of one call, every call costing
// one slot). Among tools with room a free slot of the member goes to the
// tool whose next job is the oldest, as if all tools shared one FIFO, and
// a tool at its max_in_flight costs nothing: its waiting jobs are not
// rescanned at every completion. Each running call has one goroutine, and
// there are never more of them than maxInFlight.
type dispatcher struct {
	reg         *tools.Registry
	tracer      trace.Tracer // nil: tracing off; set before the first submit
	maxInFlight int
	hooks       Hooks
	ctx         context.Context // parent of every call; cancelled when a drain times out
	out         chan completion
	wake        func()
	// waited, when set (before the first submit), is told how long each
	// job waited for its slot; it is called under mu, so it must not
	// block (a metric).
	waited func(tenant string, d time.Duration)
	wg     sync.WaitGroup

	mu struct {
		sync.Mutex
		running  int
		queued   int    // jobs waiting, over all tools
		seq      uint64 // submission order of the jobs
		tools    map[string]*toolQueue
		waiting  []*toolQueue   // the tools with waiting jobs, in no order
		released map[int32]bool // partitions the callbacks released and the loop has not assigned again
	}
}

// toolQueue is one tool's share of the dispatcher, under dispatcher.mu.
type toolQueue struct {
	limit   int // max_in_flight; 0: none (an unknown tool)
	running int
	// ring holds the tenants with waiting jobs, in the order they are
	// served; next is the index of the one whose turn it is.
	ring     []*tenantQueue
	next     int
	byTenant map[string]*tenantQueue // the ring's tenants
	waiting  int                     // jobs in the ring
}

// tenantQueue is one tenant's jobs waiting for one tool, oldest first.
type tenantQueue struct {
	tenant string
	jobs   []queuedJob
}

type queuedJob struct {
	job
	seq uint64
	at  time.Time // submitted
}

func (q *toolQueue) hasRoom() bool { return q.limit <= 0 || q.running < q.limit }

// head is the job the tool starts next.
func (q *toolQueue) head() *queuedJob { return &q.ring[q.next].jobs[0] }

// push queues qj behind its tenant's other jobs; a tenant new to the ring
// takes its turn after every tenant already waiting.
func (q *toolQueue) push(qj queuedJob) {
	q.waiting++
	if tq, ok := q.byTenant[qj.Tenant]; ok {
		tq.jobs = append(tq.jobs, qj)
		return
	}
	tq := &tenantQueue{tenant: qj.Tenant, jobs: []queuedJob{qj}}
	q.ring = append(q.ring, tq)
	q.byTenant[qj.Tenant] = tq
}

// pop takes the head job and passes the turn to the next tenant.
func (q *toolQueue) pop() queuedJob {
	tq := q.ring[q.next]
	qj := tq.jobs[0]
	tq.jobs[0] = queuedJob{}
	tq.jobs = tq.jobs[1:]
	q.waiting--
	if len(tq.jobs) == 0 {
		q.dropTenant(q.next) // the next tenant moves into the turn
	} else {
		q.next++
	}
	if q.next >= len(q.ring) {
		q.next = 0
	}
	return qj
}

// dropTenant removes the ring's i-th tenant, keeping the turn where it is.
func (q *toolQueue) dropTenant(i int) {
	delete(q.byTenant, q.ring[i].tenant)
	q.ring = slices.Delete(q.ring, i, i+1)
	if q.next > i {
		q.next--
	}
}

func newDispatcher(ctx context.Context, reg *tools.Registry, maxInFlight int, hooks Hooks, wake func()) *dispatcher {
	d := &dispatcher{reg: reg, maxInFlight: maxInFlight, hooks: hooks, ctx: ctx,
		out: make(chan completion, maxInFlight), wake: wake}
	d.mu.tools = map[string]*toolQueue{}
	d.mu.released = map[int32]bool{}
	return d
}

// submit queues jobs and starts those the bounds allow. Never blocks. It
// refuses, and returns, the jobs of partitions the group's callbacks
// released and the loop has not assigned again (cancelPartitions,
// grantPartitions): between a revocation and the loop's next poll the
// loop may still restore such a partition and take its reads over, or
// commit a tick's calls for it, and none of those may start.
func (d *dispatcher) submit(jobs ...job) (refused []job) {
	now := time.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, j := range jobs {
		if d.mu.released[j.P] {
			refused = append(refused, j)
			continue
		}
		n++
		q := d.toolLocked(j.Tool)
		if q.waiting == 0 {
			d.mu.waiting = append(d.mu.waiting, q)
		}
		d.mu.seq++
		q.push(queuedJob{job: j, seq: d.mu.seq, at: now})
	}
	d.mu.queued += n
	d.startRunnableLocked()
	return refused
}

// queued is the number of jobs waiting for a slot plus those running.
func (d *dispatcher) queued() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.mu.queued + d.mu.running
}

// startRunnableLocked starts waiting jobs, the oldest head first among
// the tools with room, until the overall bound is reached or every tool
// with waiting jobs is at its own. Each start costs one pass over the
// tools with waiting jobs, not over the jobs.
func (d *dispatcher) startRunnableLocked() {
	for d.mu.running < d.maxInFlight && d.mu.queued > 0 {
		var q *toolQueue
		at := 0
		for i, w := range d.mu.waiting {
			if w.hasRoom() && (q == nil || w.head().seq < q.head().seq) {
				q, at = w, i
			}
		}
		if q == nil {
			return // every tool with waiting jobs is at its max_in_flight
		}
		qj := q.pop()
		if q.waiting == 0 {
			last := len(d.mu.waiting) - 1
			d.mu.waiting[at] = d.mu.waiting[last]
			d.mu.waiting[last] = nil
			d.mu.waiting = d.mu.waiting[:last]
		}
		d.mu.queued--
		d.mu.running++
		q.running++
		if d.waited != nil {
			d.waited(qj.Tenant, time.Since(qj.at))
		}
		d.wg.Add(1)
		go d.run(q, qj.job)
	}
}

// toolLocked returns the queue of tool, creating it with the tool's
// max_in_flight: the registry is fixed after start, so each tool is looked
// up once.
func (d *dispatcher) toolLocked(tool string) *toolQueue {
	q, ok := d.mu.tools[tool]
	if !ok {
		q = &toolQueue{byTenant: map[string]*tenantQueue{}}
		if spec, _, found := d.reg.Lookup(tool); found {
			q.limit = spec.MaxInFlight
		}
		d.mu.tools[tool] = q
	}
	return q
}

func (d *dispatcher) run(q *toolQueue, j job) {
	defer d.wg.Done()
	start := time.Now()
	d.hooks.at(PointDuringCall, j.RK)
	span, tp, ts := d.callSpan(j)
	out := d.invoke(j, tp, ts)
	traceID := endCallSpan(span, out)
	d.hooks.at(PointAfterCall, j.RK)
	d.out <- completion{job: j, outcome: out, dur: time.Since(start), traceID: traceID}
	d.wake()
	d.mu.Lock()
	d.mu.running--
	q.running--
	d.startRunnableLocked()
	d.mu.Unlock()
}

// invoke calls j's tool; its request carries the trace context tp, ts.
func (d *dispatcher) invoke(j job, tp, ts string) tools.Outcome {
	_, tool, ok := d.reg.Lookup(j.Tool)
	if !ok {
		// Unreachable unless the registry lost a tool: nothing was sent.
		return tools.Outcome{Status: tools.NotExecuted, Code: "unknown_tool", Message: "tool " + j.Tool + " is not registered"}
	}
	args, err := decodeArgs(j.Args)
	if err != nil {
		return tools.Outcome{Status: tools.NotExecuted, Code: "bad_args", Message: err.Error()}
	}
	req := tools.Request{
		Tenant: j.Tenant, Key: j.Key, Tool: j.Tool, Args: args, Traceparent: tp, Tracestate: ts,
		DownstreamKey: saga.DownstreamKey(j.DownstreamKey, j.Tenant, j.Tool, j.Key),
	}
	if j.DecidedAt > 0 {
		req.Decided = time.UnixMilli(j.DecidedAt)
	}
	return tool.Invoke(d.ctx, req)
}

// decodeArgs decodes the call's stored canonical arguments.
func decodeArgs(b []byte) (map[string]any, error) {
	m, err := wire.DecodeCanonicalArgs(b)
	if err != nil {
		return nil, fmt.Errorf("executor: decode canonical args: %w", err)
	}
	return m, nil
}

// cancelQueued removes and returns the jobs that have not started, in the
// order they were submitted.
func (d *dispatcher) cancelQueued() []job {
	return d.cancel(func(job) bool { return true })
}

// cancelPartitions removes and returns the jobs of partitions ps that
// have not started, in the order they were submitted: once the group has
// taken a partition back, no call of it may start here. Safe to call from
// a group callback: the lock is never held while waiting.
func (d *dispatcher) cancelPartitions(ps []int32) []job {
	d.mu.Lock()
	for _, p := range ps {
		d.mu.released[p] = true
	}
	d.mu.Unlock()
	return d.cancel(func(j job) bool { return slices.Contains(ps, j.P) })
}

// grantPartitions lets jobs of ps be submitted again: the loop applied
// their assignment.
func (d *dispatcher) grantPartitions(ps []int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range ps {
		delete(d.mu.released, p)
	}
}

// cancel removes and returns the waiting jobs that drop chooses.
func (d *dispatcher) cancel(drop func(job) bool) []job {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []queuedJob
	waiting := d.mu.waiting[:0]
	for _, q := range d.mu.waiting {
		out = q.cancel(drop, out)
		if q.waiting > 0 {
			waiting = append(waiting, q)
		}
	}
	clear(d.mu.waiting[len(waiting):])
	d.mu.waiting = waiting
	d.mu.queued -= len(out)
	slices.SortFunc(out, func(a, b queuedJob) int { return cmp.Compare(a.seq, b.seq) })
	jobs := make([]job, len(out))
	for i, qj := range out {
		jobs[i] = qj.job
	}
	return jobs
}

// cancel moves the jobs drop chooses to out; the others keep their
// order, and the turn stays with the tenant that had it, or the next one.
func (q *toolQueue) cancel(drop func(job) bool, out []queuedJob) []queuedJob {
	for i := len(q.ring) - 1; i >= 0; i-- {
		tq := q.ring[i]
		kept := tq.jobs[:0]
		for _, qj := range tq.jobs {
			if drop(qj.job) {
				out = append(out, qj)
				q.waiting--
			} else {
				kept = append(kept, qj)
			}
		}
		clear(tq.jobs[len(kept):])
		tq.jobs = kept
		if len(kept) == 0 {
			q.dropTenant(i)
		}
	}
	if q.next >= len(q.ring) {
		q.next = 0
	}
	return out
}
