package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/clients/go"
	"github.com/atmostonce/toolexec/internal/tracing"
	"github.com/atmostonce/toolexec/wire"
)

// Spans of the gateway, made only when tracing is on (g.tracer not nil):
//
//	<METHOD> <route>     server   a request, from its traceparent header
//	tools/call <tool>    server   an MCP call, from its _meta traceparent
//	send <intents>       producer the intent's produce; its traceparent and
//	                              tracestate go into the record's headers,
//	                              so the executor's spans continue it
//
// "From" the caller's traceparent is by Config.CallerTrace: a new trace
// linked to the caller's span (TraceLink, the default), or the caller's
// trace continued (TraceContinue). Off, the caller's traceparent is
// passed on as it came under TraceContinue, and not at all under
// TraceLink.

// serverSpan starts the span of request r; r's context carries it. A nil
// span when tracing is off.
func (g *Gateway) serverSpan(r *http.Request) (*http.Request, trace.Span) {
	if g.tracer == nil {
		return r, nil
	}
	caller := trace.SpanContextFromContext(tracing.Propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header)))
	route := r.Pattern // a pattern may start with its method: the route is its path
	if i := strings.IndexByte(route, '/'); i >= 0 {
		route = route[i:]
	}
	ctx, span := g.startFrom(r.Context(), caller, r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(tracing.AttrHTTPMethod.String(r.Method), tracing.AttrHTTPRoute.String(route)))
	return r.WithContext(ctx), span
}

// startFrom starts a span from the caller's span context by
// Config.CallerTrace: its child (TraceContinue), or the root of a new
// trace with a link to it (TraceLink). An invalid caller span context is
// no parent and no link.
func (g *Gateway) startFrom(ctx context.Context, caller trace.SpanContext, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	switch {
	case g.cfg.CallerTrace == TraceContinue:
		ctx = trace.ContextWithRemoteSpanContext(ctx, caller)
	case caller.IsValid():
		opts = append(opts, trace.WithNewRoot(), trace.WithLinks(trace.Link{SpanContext: caller}))
	default:
		opts = append(opts, trace.WithNewRoot())
	}
	return g.tracer.Start(ctx, name, opts...)
}

// endServerSpan records the response's status and ends the span.
func endServerSpan(span trace.Span, status int) {
	if span == nil {
		return
	}
	span.SetAttributes(tracing.AttrHTTPStatus.Int(status))
	if status >= 500 {
		span.SetStatus(codes.Error, "")
		span.SetAttributes(tracing.AttrErrorType.String(strconv.Itoa(status)))
	}
	span.End()
}

// mcpSpan starts an MCP call's span when its _meta carries a traceparent
// (the agent's own trace), which then wins over the HTTP request's.
func (g *Gateway) mcpSpan(ctx context.Context, req intentReq) (context.Context, trace.Span) {
	sc := tracing.Remote(req.traceparent, req.tracestate)
	if g.tracer == nil || !sc.IsValid() {
		return ctx, nil
	}
	return g.startFrom(ctx, sc, "tools/call "+req.tool.name(),
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(tracing.AttrTool.String(req.tool.name())))
}

// produceSpan starts the span of an intent's produce and returns the
// record options that carry its trace context. Off, the caller's own
// traceparent is carried as it came.
func (g *Gateway) produceSpan(ctx context.Context, req intentReq) (trace.Span, []client.CallOption) {
	if g.tracer == nil {
		if g.cfg.CallerTrace != TraceContinue {
			return nil, nil // the caller's trace ids go no further
		}
		return nil, []client.CallOption{client.WithTraceparent(req.traceparent)}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindProducer)}
	if !trace.SpanContextFromContext(ctx).IsValid() { // no request span: from the caller's, as a request's
		caller := tracing.Remote(req.traceparent, req.tracestate)
		if g.cfg.CallerTrace == TraceContinue {
			ctx = trace.ContextWithRemoteSpanContext(ctx, caller)
		} else if caller.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: caller}))
		}
	}
	_, span := g.tracer.Start(ctx, "send "+g.names.Intents, append(opts, trace.WithAttributes(
		tracing.AttrMsgSystem.String("kafka"), tracing.AttrMsgDestination.String(g.names.Intents), tracing.AttrMsgOperation.String("send"),
		tracing.AttrTool.String(req.tool.name()), tracing.AttrTenant.String(req.tenant), tracing.AttrKeyHash.String(tracing.KeyHash(wire.RoutingKey(req.tenant, req.key)))))...)
	tp, ts := tracing.Headers(span.SpanContext())
	return span, []client.CallOption{client.WithTraceparent(tp), client.WithTracestate(ts)}
}

// endProduceSpan ends a span that has no HTTP status: a produce, an MCP
// call.
func endProduceSpan(span trace.Span, err error) {
	if span == nil {
		return
	}
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
