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
    """The wire's key grammar (wire.CheckKey, docs/wire-format.md "Keys"),
    one for every way in: 1 to 256 bytes of UTF-8, no control character
    (C0, DEL, C1), no invisible character (the default-ignorable code
    points: zero-width spaces and joiners, format and bidirectional
    controls, variation selectors, the byte order mark, tags), no
    separator but the ASCII space, no space at either end, not "." or
    "..". Keys are compared as bytes (no Unicode normalisation: the NFC
    and NFD forms of one text are two keys)."""
    if not isinstance(k, str) or not k:
        raise InvalidRequest("the idempotency key must be a non-empty string")
    if len(k.encode("utf-8", "surrogatepass")) > MAX_KEY_BYTES:
        raise InvalidRequest(f"the idempotency key is longer than {MAX_KEY_BYTES} bytes")
    _utf8(k, "the idempotency key")
    if k in (".", ".."):
        raise InvalidRequest(f"the idempotency key may not be {k!r}")
    for i, c in enumerate(k):
        o = ord(c)
        if o < 0x20 or 0x7F <= o <= 0x9F:
            raise InvalidRequest(f"the idempotency key holds the control character U+{o:04X} at {i}")
        if _invisible(o):
            raise InvalidRequest(f"the idempotency key holds the invisible character U+{o:04X} at {i}")
        if o != 0x20 and o in _KEY_SPACES:
            raise InvalidRequest(f"the idempotency key holds the separator U+{o:04X} at {i} (only the ASCII space may separate)")
    if k[0] == " " or k[-1] == " ":
        raise InvalidRequest("the idempotency key begins or ends with white space")
    return k


#: Unicode's Default_Ignorable_Code_Point characters (the Bidi_Control
#: ones among them), refused anywhere in a key: listed, as wire.CheckKey
#: lists them, so that no Unicode version decides.
_INVISIBLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF),
)


def _invisible(o: int) -> bool:
    return any(lo <= o <= hi for lo, hi in _INVISIBLE_RANGES)


#: The space separators (Zs) and line and paragraph separators: only the
#: ASCII space may be in a key, and not at either end; listed, as
#: wire.CheckKey lists them, so that no Unicode version decides.
_KEY_SPACES = frozenset([0x20, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029, 0x202F, 0x205F, 0x3000])


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
