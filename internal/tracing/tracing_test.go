package tracing

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel/trace"
)

// The environment turns tracing on with an OTLP endpoint only, and an
// unsupported exporter or protocol is refused, not ignored.
func TestOnFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		on   bool
		err  bool
	}{
		{"nothing set", nil, false, false},
		{"a service name alone", map[string]string{"OTEL_SERVICE_NAME": "x"}, false, false},
		{"endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, true, false},
		{"traces endpoint", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, true, false},
		{"exporter otlp", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, false},
		{"exporter none", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, false, false},
		{"sdk disabled", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, false, false},
		{"grpc", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, false},
		{"traces protocol wins", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, true, false},
		{"http/json", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, true},
		{"zipkin", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_TRACES_EXPORTER",
				"OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME"} {
				t.Setenv(name, tc.env[name])
			}
			tp, stop, err := FromEnv(context.Background(), "test")
			if tc.err != errors.Is(err, ErrConfig) || (tp != nil) != tc.on {
				t.Fatalf("provider %v, err %v; want on %v, err %v", tp, err, tc.on, tc.err)
			}
			if stop != nil {
				_ = stop(context.Background())
			}
		})
	}
}

// Trace context goes out and comes back whole.
func TestHeadersRoundTrip(t *testing.T) {
	tp, ts := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "vendor=x,other=y"
	sc := Remote(tp, ts)
	if !sc.IsValid() || !sc.IsRemote() || sc.TraceState().String() != ts {
		t.Fatalf("remote %+v", sc)
	}
	if gotTP, gotTS := Headers(sc); gotTP != tp || gotTS != ts {
		t.Fatalf("headers %q %q", gotTP, gotTS)
	}
	if Remote("garbage", ts).IsValid() || Remote("", "").IsValid() {
		t.Fatal("an invalid traceparent made a span context")
	}
	if a, b := Headers(trace.SpanContext{}); a != "" || b != "" {
		t.Fatal("an invalid span context made headers")
	}
	if TraceID(sc) != "4bf92f3577b34da6a3ce929d0e0e4736" || TraceID(Remote("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", "")) != "" {
		t.Fatal("TraceID must name sampled spans only")
	}
	if h := KeyHash("acme/k1"); len(h) != 16 || h != KeyHash("acme/k1") || h == KeyHash("acme/k2") {
		t.Fatalf("KeyHash %q", h)
	}
}

// A latency observed with a trace id carries it as its exemplar.
func TestObserveExemplar(t *testing.T) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "d", Buckets: []float64{1}})
	Observe(h, 0.5, "4bf92f3577b34da6a3ce929d0e0e4736")
	Observe(h, 0.7, "")
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	ex := m.Histogram.Bucket[0].Exemplar
	if m.Histogram.GetSampleCount() != 2 || ex == nil || ex.Label[0].GetValue() != "4bf92f3577b34da6a3ce929d0e0e4736" || ex.GetValue() != 0.5 {
		t.Fatalf("histogram %v", &m)
	}
}
