"""The current OpenTelemetry context as W3C trace context headers, when the
optional extra ``toolexec[otel]`` (``opentelemetry-api``) is installed, so
that a call made inside a span (a LangGraph node traced with OpenTelemetry,
say) continues that trace through the gateway, the executor and the tool.
Without the extra, or outside any span, nothing is added."""

from __future__ import annotations

try:
    from opentelemetry import propagate as _propagate
except ImportError:  # the extra is not installed
    _propagate = None  # type: ignore[assignment]


def current() -> tuple[str | None, str | None]:
    """The traceparent and tracestate of the current span's context, as
    the globally configured propagator writes them; ``(None, None)`` when
    OpenTelemetry is not installed or no span is current."""
    if _propagate is None:
        return None, None
    carrier: dict[str, str] = {}
    _propagate.inject(carrier)
    return carrier.get("traceparent") or None, carrier.get("tracestate") or None
