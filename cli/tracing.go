package cli

import (
	"context"
	"log/slog"
	"os"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/trace"

	"github.com/atmostonce/toolexec/internal/tracing"
)

// Tracing starts OpenTelemetry tracing when the OTEL_* environment asks
// for it (tracing.FromEnv), service being the default service.name. The
// provider is nil when tracing is off. stop flushes the spans still
// buffered, for at most 5 s.
func Tracing(ctx context.Context, service string, log *slog.Logger) (tp trace.TracerProvider, stop func(), err error) {
	tp, shutdown, err := tracing.FromEnv(ctx, service)
	if err != nil {
		return nil, nil, err
	}
	if tp != nil {
		otel.SetErrorHandler(exportErrors(log))
		endpoint := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
		if endpoint == "" {
			endpoint = os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")
		}
		log.Info("tracing on: spans go to the OTLP/HTTP endpoint", "endpoint", endpoint, "service", service)
	}
	return tp, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			log.Warn("tracing: spans not flushed", "err", err)
		}
	}, nil
}

// exportErrors is the SDK's error handler (spans that could not be
// exported, mostly): the process's log, in its format. The SDK's default
// prints with the standard log package, a line of another format in the
// middle of the slog lines.
func exportErrors(log *slog.Logger) otel.ErrorHandler {
	return otel.ErrorHandlerFunc(func(err error) { log.Warn("tracing: spans not exported", "err", err) })
}
