package executor

import (
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/executor/partition"
	"github.com/atmostonce/toolexec/internal/tracing"
	"github.com/atmostonce/toolexec/saga"
)

// waited makes the span of each request for approval this tick decided
// (approved, denied, lapsed): toolexec.await_approval, in the trace of
// the intent that asked, from its request to the decision, made after the
// fact like the tick's other spans. An approved call's own spans follow
// in the same trace: its dispatched call carries the asking intent's
// trace context (saga's approve).
func (tt *tickTrace) waited(rd *partition.Decisions) {
	for i := range rd.Events {
		ev := &rd.Events[i].Ev
		if ev.Kind != saga.EvApproved && ev.Kind != saga.EvDenied && ev.Kind != saga.EvApprovalLapsed {
			continue
		}
		en, ok := rd.Overlay.Lookup(ev.Tenant, ev.Key)
		if !ok || en.Prev == nil || en.Prev.Approval == nil {
			continue
		}
		asked := en.Prev
		tt.span("toolexec.await_approval", tracing.Remote(asked.Origin.Traceparent, ""), trace.SpanKindInternal,
			time.UnixMilli(asked.Approval.RequestedAt), time.UnixMilli(ev.At),
			tracing.AttrTool.String(asked.Tool), tracing.AttrTenant.String(asked.Tenant), tracing.AttrDecision.String(ev.Kind.String()),
			tracing.AttrIntentID.String(asked.Origin.IntentID), tracing.AttrApprover.String(ev.By))
	}
}
