package reconciler

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/internal/tracing"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// job is one retry or probe of a subject.
type job struct {
	subj        Subject
	inv         Investigation
	kind        StepKind // StepRetry or StepProbe
	args        []byte   // the canonical arguments of the call (a retry sends them again)
	traceparent string
	partition   int32
	epoch       uint64
}

func (j *job) routingKey() string { return wire.RoutingKey(j.subj.Tenant, j.subj.Key) }

// result is a job's outcome, handed back to the loop.
type result struct {
	job   job
	out   tools.Outcome
	crash error // a hook asked for a crash
}

// workers runs retries and probes with bounded concurrency: one goroutine
// per running job, at most MaxConcurrent. A job holds its slot until the
// loop has collected its result, so the results channel (as large as the
// slots) never blocks a worker.
type workers struct {
	reg    *tools.Registry
	tracer trace.Tracer // nil: tracing off
	hooks  Hooks
	wake   func()
	ctx    context.Context // cancelled by stop: running jobs end, their results are dropped
	cancel context.CancelFunc
	slots  chan struct{}
	out    chan result
	wg     sync.WaitGroup
	once   sync.Once
}

func newWorkers(cfg Config, wake func()) *workers {
	ctx, cancel := context.WithCancel(context.Background())
	return &workers{reg: cfg.Tools, tracer: tracing.Tracer(cfg.TracerProvider, "github.com/atmostonce/toolexec/reconciler"), hooks: cfg.Hooks, wake: wake, ctx: ctx, cancel: cancel,
		slots: make(chan struct{}, cfg.MaxConcurrent), out: make(chan result, cfg.MaxConcurrent)}
}

// submit starts j if a slot is free; false means try again at a later scan.
// Never blocks.
func (w *workers) submit(j job) bool {
	select {
	case w.slots <- struct{}{}:
	default:
		return false
	}
	w.wg.Add(1)
	go w.run(j)
	return true
}

// done releases the slot of a collected result.
func (w *workers) done() { <-w.slots }

func (w *workers) run(j job) {
	defer w.wg.Done()
	res := result{job: j}
	if err := w.hooks.at(PointInvestigating, j.routingKey()); err != nil {
		res.crash = err
	} else {
		span, tp, ts := w.investigationSpan(j)
		res.out = w.invoke(j, tp, ts)
		endInvestigationSpan(span, res.out)
	}
	w.out <- res
	w.wake()
}

// invoke makes the retry or the probe, under the downstream key the
// executor used for the call (or compensation) in doubt, so the downstream
// sees the same request again; never the key of another call of the same
// (tenant, key). A retry's request carries the trace context tp, ts.
func (w *workers) invoke(j job, tp, ts string) tools.Outcome {
	_, tool, ok := w.reg.Lookup(j.subj.Tool)
	if !ok {
		return tools.Outcome{Status: tools.Unknown, Code: "unknown_tool", Message: fmt.Sprintf("tool %q is not configured", j.subj.Tool)}
	}
	dk := saga.DownstreamKey(j.subj.DownstreamKey, j.subj.Tenant, j.subj.Tool, j.subj.Key)
	if j.kind == StepProbe {
		p, ok := tool.(tools.Prober)
		if !ok {
			return tools.Outcome{Status: tools.Unknown, Code: "no_probe", Message: fmt.Sprintf("tool %q has no probe", j.subj.Tool)}
		}
		return p.Probe(w.ctx, dk)
	}
	args, err := decodeArgs(j.args)
	if err != nil {
		return tools.Outcome{Status: tools.Unknown, Code: "bad_args", Message: err.Error()}
	}
	return tool.Invoke(w.ctx, tools.Request{Tenant: j.subj.Tenant, Key: j.subj.Key, Tool: j.subj.Tool,
		DownstreamKey: dk, Args: args, Traceparent: tp, Tracestate: ts})
}

// decodeArgs decodes canonical msgpack arguments as the executor does, so
// a retry sends the same JSON body.
func decodeArgs(b []byte) (map[string]any, error) {
	m, err := wire.DecodeCanonicalArgs(b)
	if err != nil {
		return nil, fmt.Errorf("reconciler: decode canonical args: %w", err)
	}
	return m, nil
}

// stop cancels the running jobs and waits for them. Idempotent.
func (w *workers) stop() {
	w.once.Do(func() {
		w.cancel()
		w.wg.Wait()
	})
}
