"""Checks of the wire limits (docs/wire-format.md, "Limits"), made before
anything is sent so that a bad request fails here with a clear message."""

from __future__ import annotations

import math
import re
from datetime import timedelta

from .errors import InvalidRequest

MAX_KEY_BYTES = 256  # topics: an idempotency key of more is "oversized"
MAX_TOOL_BYTES = 128  # topics: a longer tool name is "invalid_field"
MAX_REPLY_TO_BYTES = 249  # Kafka's topic-name limit
DEFAULT_TENANT = "default"
_TENANT = re.compile(r"[a-z0-9_-]{1,64}")

#: How long ``call`` waits for a final answer unless told: the gateway's
#: default ``Prefer: wait``.
DEFAULT_WAIT = 10.0


def key(k: object) -> str:
    if not isinstance(k, str) or not k:
        raise InvalidRequest("the idempotency key must be a non-empty string")
    if len(k.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise InvalidRequest(f"the idempotency key is longer than {MAX_KEY_BYTES} bytes")
    _utf8(k, "the idempotency key")
    return k


def tenant(t: object) -> str:
    if t is None:
        return DEFAULT_TENANT
    if not isinstance(t, str) or not _TENANT.fullmatch(t):
        raise InvalidRequest(f"tenant {t!r} does not match [a-z0-9_-]{{1,64}}")
    return t


def tool(name: object) -> str:
    if not isinstance(name, str) or not name:
        raise InvalidRequest("the tool name must be a non-empty string")
    if len(name.encode("utf-8", "surrogatepass")) > MAX_TOOL_BYTES:
        raise InvalidRequest(f"the tool name is longer than {MAX_TOOL_BYTES} bytes")
    _utf8(name, "the tool name")
    return name


def wait(w: float | timedelta | None) -> float:
    """Seconds to wait, from a number or a timedelta; None is the default."""
    if w is None:
        return DEFAULT_WAIT
    s = w.total_seconds() if isinstance(w, timedelta) else w
    if isinstance(s, bool) or not isinstance(s, (int, float)) or math.isnan(s) or s < 0:
        raise InvalidRequest(f"wait must be a non-negative number of seconds, not {w!r}")
    return float(s)


def _utf8(s: str, what: str) -> None:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidRequest(f"{what} is not valid UTF-8: {e}") from None
