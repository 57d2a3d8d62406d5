package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// --tracing measures what tracing costs: the members (executor, gateway)
// trace every call (OTEL_TRACES_SAMPLER=always_on) and export their spans
// over OTLP/HTTP to a sink in this process, which decodes and counts them.
// Without it, no member traces: the OTEL_* variables of the environment
// are cleared for them, so that a run compares like with like.

// traceSink is an OTLP/HTTP traces endpoint that decodes every export
// request and counts its spans.
type traceSink struct {
	srv   *http.Server
	spans atomic.Int64
	bytes atomic.Int64
}

// memberTracing sets the members' environment: tracing to a new sink when
// on (its address returned), none when off.
func memberTracing(on bool) (*traceSink, error) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "OTEL_") {
			_ = os.Unsetenv(name)
		}
	}
	if !on {
		return nil, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &traceSink{}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serve)}
	go func() { _ = s.srv.Serve(ln) }()
	_ = os.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+ln.Addr().String())
	_ = os.Setenv("OTEL_TRACES_SAMPLER", "always_on")
	return s, nil
}

func (s *traceSink) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var ex coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &ex); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n := 0
	for _, rs := range ex.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			n += len(ss.Spans)
		}
	}
	s.spans.Add(int64(n))
	s.bytes.Add(int64(len(body)))
	b, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

func (s *traceSink) close() {
	if s != nil {
		_ = s.srv.Shutdown(context.Background())
	}
}
