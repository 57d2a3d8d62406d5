// Package tracing turns OpenTelemetry tracing on from the standard OTEL_*
// environment variables, and holds what the executor, the gateway and the
// reconciler share about spans: W3C trace context in and out of headers,
// the attribute names, the hash that stands for a key.
//
// Tracing is off unless an OTLP endpoint is set
// (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or
// OTEL_TRACES_EXPORTER=otlp; OTEL_SDK_DISABLED=true and
// OTEL_TRACES_EXPORTER=none turn it off. Off, FromEnv returns a nil
// provider and every component skips its spans behind one nil check, so
// tracing off costs nothing per call. On, spans go to an OTLP exporter in
// batches, over HTTP (protobuf, the default) or gRPC
// (OTEL_EXPORTER_OTLP_PROTOCOL=grpc); the sampler (OTEL_TRACES_SAMPLER,
// default parentbased_always_on), the service name (OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES), the exporter's endpoint, headers, timeout
// and TLS (OTEL_EXPORTER_OTLP_*) and the batch processor
// (OTEL_BSP_*) are the SDK's, read as the specification says.
package tracing

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// ErrConfig reports an OTEL_* setting this build cannot honour (another
// exporter, the http/json protocol): refused at start rather than
// silently ignored.
var ErrConfig = errors.New("tracing: unsupported OpenTelemetry setting")

// Headers that carry W3C trace context, in HTTP requests and Kafka
// records alike.
const (
	TraceparentHeader = "traceparent"
	TracestateHeader  = "tracestate"
)

// Attribute keys of toolexec's spans. Keys and arguments never appear in
// clear: a key is KeyHash.
const (
	AttrTool      = attribute.Key("toolexec.tool")
	AttrTenant    = attribute.Key("toolexec.tenant")
	AttrToolClass = attribute.Key("toolexec.tool_class")
	AttrDecision  = attribute.Key("toolexec.decision")
	AttrWasReplay = attribute.Key("toolexec.was_replay")
	AttrKeyHash   = attribute.Key("toolexec.key_hash")
	AttrStatus    = attribute.Key("toolexec.status")
	AttrIntentID  = attribute.Key("toolexec.intent_id")
	AttrCalls     = attribute.Key("toolexec.tick_calls")
	AttrApprover  = attribute.Key("toolexec.approver") // who approved or denied a call
)

// Attributes of the OpenTelemetry semantic conventions the spans use.
const (
	AttrGenAIOperation  = attribute.Key("gen_ai.operation.name")
	AttrGenAIToolName   = attribute.Key("gen_ai.tool.name")
	AttrGenAIToolCallID = attribute.Key("gen_ai.tool.call.id")
	AttrGenAIToolType   = attribute.Key("gen_ai.tool.type")
	AttrMsgSystem       = attribute.Key("messaging.system")
	AttrMsgDestination  = attribute.Key("messaging.destination.name")
	AttrMsgOperation    = attribute.Key("messaging.operation.type")
	AttrHTTPMethod      = attribute.Key("http.request.method")
	AttrHTTPRoute       = attribute.Key("http.route")
	AttrHTTPStatus      = attribute.Key("http.response.status_code")
	AttrErrorType       = attribute.Key("error.type")
)

// Propagator reads and writes W3C trace context (traceparent, tracestate).
var Propagator = propagation.TraceContext{}

// On reports whether the environment asks for traces.
func On() (bool, error) {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	switch exp := strings.ToLower(strings.TrimSpace(os.Getenv("OTEL_TRACES_EXPORTER"))); exp {
	case "none":
		return false, nil
	case "otlp":
		return true, checkProtocol()
	case "":
	default:
		return false, fmt.Errorf("%w: OTEL_TRACES_EXPORTER=%s; this build exports traces with otlp only", ErrConfig, exp)
	}
	if os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
		return false, nil
	}
	return true, checkProtocol()
}

// protocol is the OTLP protocol the environment names for traces:
// http/protobuf (the default) or grpc. http/json is refused: the SDK has
// no such exporter.
func protocol() (string, error) {
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		switch p := strings.TrimSpace(os.Getenv(name)); p {
		case "":
			continue
		case "http/protobuf", "grpc":
			return p, nil
		default:
			return "", fmt.Errorf("%w: %s=%s; the exporters are http/protobuf (the default) and grpc", ErrConfig, name, p)
		}
	}
	return "http/protobuf", nil
}

func checkProtocol() error {
	_, err := protocol()
	return err
}

// exporter is the OTLP exporter of the environment's protocol, configured
// by its OTEL_EXPORTER_OTLP_* variables.
func exporter(ctx context.Context) (sdktrace.SpanExporter, error) {
	p, err := protocol()
	if err != nil {
		return nil, err
	}
	if p == "grpc" {
		return otlptracegrpc.New(ctx)
	}
	return otlptracehttp.New(ctx)
}

// FromEnv returns the tracer provider the environment asks for, and the
// function that flushes and stops it; nil and a no-op when tracing is
// off. service is the default service.name (OTEL_SERVICE_NAME wins).
func FromEnv(ctx context.Context, service string) (trace.TracerProvider, func(context.Context) error, error) {
	noop := func(context.Context) error { return nil }
	on, err := On()
	if err != nil || !on {
		return nil, noop, err
	}
	exp, err := exporter(ctx)
	if err != nil {
		return nil, noop, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", service)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, noop, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

// Tracer returns the named tracer of tp; nil when tp is nil (tracing off).
func Tracer(tp trace.TracerProvider, name string) trace.Tracer {
	if tp == nil {
		return nil
	}
	return tp.Tracer(name)
}

// Remote is the span context a traceparent (and tracestate) names; not
// valid when traceparent is not a W3C trace context.
func Remote(traceparent, tracestate string) trace.SpanContext {
	if traceparent == "" {
		return trace.SpanContext{}
	}
	carrier := propagation.MapCarrier{TraceparentHeader: traceparent}
	if tracestate != "" {
		carrier[TracestateHeader] = tracestate
	}
	return trace.SpanContextFromContext(Propagator.Extract(context.Background(), carrier))
}

// Headers writes sc as a traceparent and a tracestate ("" when it has
// none; both "" when sc is not valid).
func Headers(sc trace.SpanContext) (traceparent, tracestate string) {
	if !sc.IsValid() {
		return "", ""
	}
	carrier := propagation.MapCarrier{}
	Propagator.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	return carrier[TraceparentHeader], carrier[TracestateHeader]
}

// KeyHash stands for a key in spans: the first 16 hex digits of the
// SHA-256 of its routing key, enough to find every span of one key and
// nothing to read the key from.
func KeyHash(routingKey string) string {
	h := sha256.Sum256([]byte(routingKey))
	return hex.EncodeToString(h[:8])
}

// TraceID is sc's trace id for an exemplar; "" when sc is not sampled.
func TraceID(sc trace.SpanContext) string {
	if !sc.IsSampled() {
		return ""
	}
	return sc.TraceID().String()
}

// Observe records v on o, with traceID as its exemplar when there is one
// (a sampled span's), so that a slow bucket in Grafana leads to a trace.
// Exemplars are exported in the OpenMetrics format only.
func Observe(o prometheus.Observer, v float64, traceID string) {
	if eo, ok := o.(prometheus.ExemplarObserver); ok && traceID != "" {
		eo.ObserveWithExemplar(v, prometheus.Labels{"trace_id": traceID})
		return
	}
	o.Observe(v)
}
