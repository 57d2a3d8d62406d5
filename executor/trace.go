package executor

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/codes"
	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/internal/tracing"
	"github.com/atmostonce/toolexec/saga"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// The executor's spans of a call, made only when Config.TracerProvider is
// set (the loop holds a nil *tickTrace otherwise, and every hook returns
// at its nil check):
//
//	toolexec.decide          consumer  one polled intent decided; its parent is the
//	                                   record's traceparent (the gateway's produce)
//	toolexec.commit_started  internal  the transaction that committed the call's
//	                                   started event, confirmed
//	execute_tool <tool>      internal  the tool call, after the GenAI semantic
//	                                   conventions; the tool's request carries its
//	                                   traceparent and tracestate
//	toolexec.commit_outcome  internal  the transaction that recorded the outcome
//	toolexec.answer          producer  an answer committed (a replay's, a conflict's,
//	                                   pending's, or the outcome's)
//	toolexec.await_approval  internal  a request for a person's approval, from the
//	                                   intent that asked to the approve, deny or
//	                                   lapse (trace_approval.go)
//
// The decision, the commits and the answers are per tick: the spans of one
// tick's calls share its times (the poll, the end of the step, the
// transaction's confirmation), made after the fact with those timestamps,
// so that the loop starts and ends nothing per record. A call's later
// spans are children of its decision: after the commit the dispatched
// call carries the decision's trace context (partition.Call.Traceparent,
// Tracestate), and its completion brings it back.

// tracerName names the executor's tracer.
const tracerName = "github.com/atmostonce/toolexec/executor"

// callTracer makes the spans; nil when tracing is off.
type callTracer struct {
	t       trace.Tracer
	reg     *tools.Registry
	results string // the default answers topic
}

func newCallTracer(tp trace.TracerProvider, reg *tools.Registry, results string) *callTracer {
	if tp == nil {
		return nil
	}
	return &callTracer{t: tp.Tracer(tracerName), reg: reg, results: results}
}

// tickTrace is one tick's spans in the making.
type tickTrace struct {
	ct      *callTracer
	start   time.Time                    // the poll returned
	stepped time.Time                    // the decisions were made; the transaction begins
	byInput map[string]trace.SpanContext // routing key + "\x00" + intent id -> its decision's span
}

// tick starts a tick's spans; nil when tracing is off.
func (ct *callTracer) tick(start time.Time) *tickTrace {
	if ct == nil {
		return nil
	}
	return &tickTrace{ct: ct, start: start}
}

// span makes one finished span under parent.
func (tt *tickTrace) span(name string, parent trace.SpanContext, kind trace.SpanKind, from, to time.Time, attrs ...attribute.KeyValue) trace.SpanContext {
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), parent)
	_, s := tt.ct.t.Start(ctx, name, trace.WithSpanKind(kind), trace.WithTimestamp(from), trace.WithAttributes(attrs...))
	s.End(trace.WithTimestamp(to))
	return s.SpanContext()
}

// decided makes a decision span for every polled record of the step.
func (tt *tickTrace) decided(pr *prepared, rd *partition.Decisions) {
	if tt == nil {
		return
	}
	tt.stepped = time.Now()
	v := verdictsOf(rd)
	tt.byInput = make(map[string]trace.SpanContext, len(pr.poll.Inputs))
	for i := range pr.poll.Inputs {
		in := &pr.poll.Inputs[i]
		tenant, key, tool, id := in.Salvage.Tenant, in.Salvage.Key, in.Salvage.Tool, in.Salvage.ID
		decision, replay := v.of(i, in)
		parent := tracing.Remote(in.Traceparent, header(pr.records[i], tracing.TracestateHeader))
		sc := tt.span("toolexec.decide", parent, trace.SpanKindConsumer, tt.start, tt.stepped,
			tracing.AttrMsgSystem.String("kafka"), tracing.AttrMsgDestination.String(pr.records[i].Topic), tracing.AttrMsgOperation.String("process"),
			tracing.AttrTool.String(tool), tracing.AttrTenant.String(tenant), tracing.AttrToolClass.String(tt.ct.class(tool)),
			tracing.AttrDecision.String(decision), tracing.AttrWasReplay.Bool(replay), tracing.AttrIntentID.String(id),
			tracing.AttrKeyHash.String(tracing.KeyHash(wire.RoutingKey(tenant, key))))
		tt.byInput[wire.RoutingKey(tenant, key)+"\x00"+id] = sc
	}
}

func (ct *callTracer) class(tool string) string {
	spec, _, ok := ct.reg.Lookup(tool)
	if !ok {
		return ""
	}
	return string(spec.Class)
}

// committed makes the spans of a confirmed transaction: the started
// commits of its calls (which then carry their decision's trace context
// to the dispatcher), the outcome commits and the answers.
func (tt *tickTrace) committed(rd *partition.Decisions) {
	if tt == nil {
		return
	}
	end := time.Now()
	tt.waited(rd)
	n := attribute.Int(string(tracing.AttrCalls), len(rd.Calls))
	for i := range rd.Calls {
		c := &rd.Calls[i]
		parent, ok := tt.byInput[c.RK+"\x00"+c.CallID]
		if !ok { // a read taken over from a previous owner: its intent's own context
			parent = tracing.Remote(c.Traceparent, c.Tracestate)
		}
		tt.span("toolexec.commit_started", parent, trace.SpanKindInternal, tt.stepped, end, tracing.AttrTool.String(c.Tool), n)
		c.Traceparent, c.Tracestate = tracing.Headers(parent)
	}
	calls := make(map[string]trace.SpanContext, len(rd.Recorded))
	for _, cm := range rd.Recorded {
		parent := tracing.Remote(cm.Call.Traceparent, cm.Call.Tracestate)
		calls[cm.Call.RK+"\x00"+cm.Call.CallID] = parent
		tt.span("toolexec.commit_outcome", parent, trace.SpanKindInternal, tt.stepped, end,
			tracing.AttrTool.String(cm.Call.Tool), tracing.AttrStatus.String(cm.Outcome.Status.String()))
	}
	for i := range rd.Answers {
		a := &rd.Answers[i]
		k := wire.RoutingKey(a.Tenant, a.Key) + "\x00" + a.To.IntentID
		parent, ok := tt.byInput[k]
		if !ok {
			parent, ok = calls[k]
		}
		if !ok { // a waiter answered when the key settled: its own intent's context
			parent = tracing.Remote(a.To.Traceparent, "")
		}
		to := a.To.ReplyTo
		if to == "" || a.ReplyToError != "" {
			to = tt.ct.results
		}
		tt.span("toolexec.answer", parent, trace.SpanKindProducer, tt.stepped, end, tracing.AttrMsgSystem.String("kafka"),
			tracing.AttrMsgDestination.String(to), tracing.AttrMsgOperation.String("send"), tracing.AttrStatus.String(a.Status),
			tracing.AttrWasReplay.Bool(a.WasReplay), tracing.AttrIntentID.String(a.To.IntentID))
	}
}

// verdicts tells, from a Decisions value, what was decided for each polled record.
type verdicts struct {
	calls    map[string]saga.CallKind // routing key + "\x00" + call id
	answers  map[string]*partition.Answer
	forwards map[int]bool
}

func verdictsOf(rd *partition.Decisions) verdicts {
	v := verdicts{calls: make(map[string]saga.CallKind, len(rd.Calls)), answers: make(map[string]*partition.Answer, len(rd.Answers)),
		forwards: make(map[int]bool, len(rd.Forwards))}
	for _, c := range rd.Calls {
		v.calls[c.RK+"\x00"+c.CallID] = c.Kind
	}
	for i := range rd.Answers {
		a := &rd.Answers[i]
		k := wire.RoutingKey(a.Tenant, a.Key) + "\x00" + a.To.IntentID
		if _, ok := v.answers[k]; !ok {
			v.answers[k] = a
		}
	}
	for _, f := range rd.Forwards {
		v.forwards[f.In] = true
	}
	return v
}

// of names the decision on polled record i: a new call (or a
// compensation, a read), a replay, a conflict, the key in doubt
// (answered pending), a wait for the call in flight (no answer yet), a
// rejection, a forward, a resolve.
func (v verdicts) of(i int, in *partition.Input) (decision string, wasReplay bool) {
	switch {
	case in.Reject != nil:
		return "reject", false
	case v.forwards[i]:
		return "forward", false
	}
	k := wire.RoutingKey(in.Intent.Tenant, in.Intent.Key) + "\x00" + in.Intent.IntentID
	if kind, ok := v.calls[k]; ok {
		switch kind {
		case saga.CallCompensation:
			return "compensate", false
		case saga.CallReadOnly:
			return "read", false
		}
		return "new_call", false
	}
	a, ok := v.answers[k]
	switch {
	case !ok:
		return "wait", false
	case a.Status == codes.StatusConflict:
		return "conflict", false
	case a.Status == codes.StatusPending && a.Err != nil && a.Err.Code == codes.ErrAwaitingApproval:
		return "await_approval", false
	case a.Status == codes.StatusPending || a.Status == codes.StatusCompensationPending:
		return "in_doubt", false
	case a.Status == codes.StatusRejected:
		return "reject", false
	case a.Status == codes.StatusResolved && !a.WasReplay:
		return "resolve", false
	case a.WasReplay:
		return "replay", true
	}
	return a.Status, false
}

// callSpan starts the execute_tool span of job j, under its decision, and
// returns the trace context its request carries. Off, the call carries the
// intent's own traceparent, as it came.
func (d *dispatcher) callSpan(j job) (trace.Span, string, string) {
	if d.tracer == nil {
		return nil, j.Traceparent, ""
	}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), tracing.Remote(j.Traceparent, j.Tracestate))
	_, span := d.tracer.Start(ctx, "execute_tool "+j.Tool, trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		tracing.AttrGenAIOperation.String("execute_tool"), tracing.AttrGenAIToolName.String(j.Tool),
		tracing.AttrGenAIToolCallID.String(j.CallID), tracing.AttrGenAIToolType.String("extension"),
		tracing.AttrTenant.String(j.Tenant), tracing.AttrKeyHash.String(tracing.KeyHash(j.RK))))
	tp, ts := tracing.Headers(span.SpanContext())
	return span, tp, ts
}

// endCallSpan records the call's outcome and ends its span; it returns the
// trace id for the call duration's exemplar.
func endCallSpan(span trace.Span, out tools.Outcome) string {
	if span == nil {
		return ""
	}
	span.SetAttributes(tracing.AttrStatus.String(out.Status.String()))
	if out.Status != tools.Succeeded {
		span.SetStatus(otelcodes.Error, out.Message)
		span.SetAttributes(tracing.AttrErrorType.String(out.Code))
	}
	span.End()
	return tracing.TraceID(span.SpanContext())
}
