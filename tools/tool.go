package tools

import (
	"context"
	"fmt"
	"time"
)

// Request is one invocation.
type Request struct {
	Tenant, Key, Tool string
	// DownstreamKey is the call's own key, the one its started event
	// carries (new for every call of a key), sent as the Idempotency-Key
	// header, the same on every attempt and every probe of the call.
	DownstreamKey string
	// Args is sent as a JSON object; nil is sent as {}.
	Args map[string]any
	// Traceparent is a W3C traceparent, forwarded as the "traceparent"
	// header when non-empty and printable ASCII.
	Traceparent string
	// Tracestate goes with Traceparent as the "tracestate" header (the
	// same checks, at most wire.MaxTracestateBytes), only with one.
	Tracestate string
	// Decided is when the call was decided and its pending record written:
	// the PendingTTL budget runs from here, since that record is what
	// becomes the reconciler's when the budget ends. Zero: from when
	// Invoke begins.
	Decided time.Time
}

// Tool invokes one call. Implementations must be safe for concurrent use
// and must honour ctx cancellation. Invoke blocks until the call is done.
type Tool interface {
	Invoke(ctx context.Context, req Request) Outcome
}

// Prober is implemented by tools that can say what became of an earlier
// call, given its downstream key (HTTP does, for class Probe).
type Prober interface {
	Probe(ctx context.Context, downstreamKey string) Outcome
}

// Func adapts a function to Tool, for in-process tools and tests. The
// function must itself be safe for concurrent use and honour ctx.
type Func func(ctx context.Context, req Request) Outcome

// Invoke calls f. A panic becomes Outcome{Status: Unknown, Code: "panic"}:
// Unknown rather than NotExecuted, because a panicking in-process tool may
// already have had side effects.
func (f Func) Invoke(ctx context.Context, req Request) (out Outcome) {
	defer func() {
		if p := recover(); p != nil {
			out = outcome(Unknown, CodePanic, fmt.Sprintf("panic: %v", p))
			out.Attempts = 1
		}
	}()
	return f(ctx, req)
}
