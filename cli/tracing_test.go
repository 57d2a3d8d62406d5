package cli

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// Spans that cannot be exported are reported in the process's own log
// format (slog), not by the standard log package.
func TestTraceExportFailuresGoToTheLog(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+closedAddr(t))
	t.Setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "300")
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	out := &syncBuffer{}
	log := slog.New(slog.NewTextHandler(out, nil))
	tp, stop, err := Tracing(context.Background(), "test", log)
	if err != nil || tp == nil {
		t.Fatalf("tracing: %v %v", tp, err)
	}
	defer stop()
	_, span := tp.Tracer("t").Start(context.Background(), "s")
	span.End()
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(out.String(), "tracing: spans not exported"); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no export failure in the log:\n%s", out.String())
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		if !strings.HasPrefix(line, "time=") {
			t.Fatalf("a line not in slog's format: %q", line)
		}
	}
}

func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
