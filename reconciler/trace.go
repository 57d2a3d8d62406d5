package reconciler

import (
	"context"

	otelcodes "go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/internal/tracing"
	"github.com/atmostonce/toolexec/tools"
	"github.com/atmostonce/toolexec/wire"
)

// investigationSpan starts the span of one retry or probe of a key in
// doubt, when tracing is on (Config.TracerProvider): a trace of its own,
// linked to the original call's (the traceparent its intent came with,
// kept in the key's record), since it runs long after that trace ended.
// The retry's request carries this span's trace context. Off, a retry
// carries the original traceparent as it came.
func (w *workers) investigationSpan(j job) (trace.Span, string, string) {
	if w.tracer == nil {
		return nil, j.traceparent, ""
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
		tracing.AttrTool.String(j.subj.Tool), tracing.AttrToolClass.String(string(j.subj.Class)), tracing.AttrTenant.String(j.subj.Tenant),
		tracing.AttrKeyHash.String(tracing.KeyHash(wire.RoutingKey(j.subj.Tenant, j.subj.Key))),
		tracing.AttrIntentID.String(j.subj.CallID), tracing.AttrDecision.String(j.kind.String()))}
	if sc := tracing.Remote(j.traceparent, ""); sc.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
	}
	_, span := w.tracer.Start(context.Background(), "toolexec.investigate "+j.kind.String(), opts...)
	tp, ts := tracing.Headers(span.SpanContext())
	return span, tp, ts
}

func endInvestigationSpan(span trace.Span, out tools.Outcome) {
	if span == nil {
		return
	}
	span.SetAttributes(tracing.AttrStatus.String(out.Status.String()))
	if out.Status != tools.Succeeded {
		span.SetStatus(otelcodes.Error, out.Message)
	}
	span.End()
}
