"""The answer to a call: :class:`Result` (the wire result of
docs/wire-format.md, typed)."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

# Statuses (docs/wire-format.md, "Statuses").
SUCCEEDED = "succeeded"
FAILED = "failed"
NOT_EXECUTED = "not_executed"
CONFLICT = "conflict"
REJECTED = "rejected"
PENDING = "pending"
COMPENSATED = "compensated"
COMPENSATION_FAILED = "compensation_failed"
COMPENSATION_PENDING = "compensation_pending"
RESOLVED = "resolved"
#: The gateway's own word (never on Kafka): no answer came within the wait
#: and the key is not known to be in doubt; the call may still be running.
RUNNING = "running"

#: The statuses that are not final: the key runs, or is parked in doubt.
NON_TERMINAL = frozenset({PENDING, COMPENSATION_PENDING, RUNNING})

#: The ``error.code`` of a pending answer whose key waits for a person's
#: approval (a tool with ``approval: required``): nothing ran.
AWAITING_APPROVAL = "awaiting_approval"
#: The ``error.code`` of a ``failed`` answer: a person denied the call.
APPROVAL_DENIED = "approval_denied"
#: The ``error.code`` of a ``not_executed`` answer: no one approved the call
#: before its request lapsed; the key is free again.
APPROVAL_LAPSED = "approval_lapsed"
#: The ``error.code`` of a ``not_executed`` answer: the tenant holds its
#: share of the calls the tool (or the executor) may hold at once; nothing
#: ran or was recorded, and ``retry_after`` says when to send it again.
OVER_SHARE = "over_share"
#: As :data:`OVER_SHARE`, but no place was free whoever asked.
QUEUE_FULL = "queue_full"


@dataclass(frozen=True)
class ErrorInfo:
    """The ``error`` of an answer: a code (``http_400``, ``args_mismatch``,
    ``in_doubt``, a reject reason, ...) and a message."""

    code: str
    message: str = ""


@dataclass(frozen=True)
class Result:
    """One answer of the executor.

    ``status`` is one of the status constants of this module. ``result`` is
    the tool's result on success (on a replay, the original one).
    ``was_replay`` is true when the answer carries an outcome produced for
    another intent: the tool was not called for this one (an answer read
    from a journal is one too).
    ``original_called_at`` is when the call that produced the outcome was
    started (UTC), so a replay says when the effect really happened.
    ``journaled`` is true when the answer was read from a local
    :class:`~toolexec.Journal` instead of being asked for again.
    """

    status: str
    result: Any = None
    error: ErrorInfo | None = None
    was_replay: bool = False
    original_intent_id: str | None = None
    original_called_at: datetime | None = None
    completed_at: datetime | None = None
    intent_id: str | None = None
    tenant: str | None = None
    key: str | None = None
    tool: str | None = None
    type: str | None = None
    attempt: int | None = None
    previous_status: str | None = None
    #: When the key's request for approval lapses (UTC), on an answer that
    #: says it awaits one.
    approval_until: datetime | None = None
    #: How long to wait before sending the key again, on an answer that says
    #: the executor had no place for the call (:attr:`busy`).
    retry_after: timedelta | None = None
    journaled: bool = False
    raw: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def terminal(self) -> bool:
        """False for ``pending``, ``compensation_pending`` and ``running``."""
        return self.status not in NON_TERMINAL

    @property
    def succeeded(self) -> bool:
        return self.status == SUCCEEDED

    @property
    def awaiting_approval(self) -> bool:
        """True for the pending answer of a key that waits for a person's
        approval: nothing ran, and a person, not a retry, decides when it
        runs."""
        return self.status == PENDING and self.error is not None and self.error.code == AWAITING_APPROVAL

    @property
    def busy(self) -> bool:
        """True for the ``not_executed`` answer of a call the executor had no
        place for (``over_share``, ``queue_full``): nothing ran, nothing was
        recorded, and the same key may be sent again after
        :attr:`retry_after`."""
        return (self.status == NOT_EXECUTED and self.error is not None
                and self.error.code in (OVER_SHARE, QUEUE_FULL))

    @classmethod
    def from_wire(cls, m: Mapping[str, Any]) -> Result:
        """Reads a wire result (a decoded msgpack map, or the gateway's JSON
        answer). Unknown fields are ignored; times may be Unix milliseconds
        or RFC 3339 strings."""
        status = m.get("status")
        if not isinstance(status, str) or not status:
            raise ValueError(f"an answer without a status: {dict(m)!r}")
        return cls(
            status=status,
            result=m.get("result"),
            error=_error(m.get("error")),
            was_replay=bool(m.get("was_replay", False)),
            original_intent_id=_str(m.get("original_intent_id")),
            original_called_at=_time(m.get("original_called_at")),
            completed_at=_time(m.get("completed_at")),
            intent_id=_str(m.get("intent_id")),
            tenant=_str(m.get("tenant")),
            key=_str(m.get("key")),
            tool=_str(m.get("tool")),
            type=_str(m.get("type")),
            attempt=m.get("attempt") if isinstance(m.get("attempt"), int) else None,
            previous_status=_str(m.get("previous_status")),
            approval_until=_time(m.get("approval_until")),
            retry_after=_millis(m.get("retry_after_ms")),
            raw=dict(m),
        )

    def to_wire(self) -> dict[str, Any]:
        """The answer as a wire-like map: times as Unix milliseconds, absent
        fields left out. ``from_wire(r.to_wire())`` equals ``r``."""
        out: dict[str, Any] = {"status": self.status, "was_replay": self.was_replay}
        if self.result is not None:
            out["result"] = self.result
        if self.error is not None:
            out["error"] = {"code": self.error.code, "message": self.error.message}
        for name in ("original_intent_id", "intent_id", "tenant", "key", "tool", "type", "attempt", "previous_status"):
            v = getattr(self, name)
            if v is not None:
                out[name] = v
        for name in ("original_called_at", "completed_at", "approval_until"):
            t = getattr(self, name)
            if t is not None:
                out[name] = _unix_ms(t)
        if self.retry_after is not None:
            out["retry_after_ms"] = self.retry_after // timedelta(milliseconds=1)
        return out

    def to_json(self) -> str:
        """``to_wire`` as JSON; bytes become ``{"$bytes": "<base64>"}``."""
        return json.dumps(self.to_wire(), default=_json_default, sort_keys=True)

    @classmethod
    def from_json(cls, s: str) -> Result:
        return cls.from_wire(json.loads(s, object_hook=_json_object_hook))

    def with_journaled(self) -> Result:
        """The answer as a journal gives it back: ``journaled``, and a replay
        (``was_replay``), since nothing was sent for it. Why both: the
        recorded answer is the step's first call's (``was_replay`` false),
        which, printed as it is, reads as if the tool had run again."""
        return replace(self, journaled=True, was_replay=True)


def _str(v: Any) -> str | None:
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return v if isinstance(v, str) else None


def _error(v: Any) -> ErrorInfo | None:
    if not isinstance(v, Mapping):
        return None
    code = _str(v.get("code")) or ""
    msg = _str(v.get("message")) or ""
    if not code and not msg:
        return None
    return ErrorInfo(code=code, message=msg)


def _millis(v: Any) -> timedelta | None:
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        return None
    return timedelta(milliseconds=v)


def _time(v: Any) -> datetime | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        if v <= 0:
            return None
        return _EPOCH + timedelta(milliseconds=v)
    if isinstance(v, str) and v:
        s = v[:-1] + "+00:00" if v.endswith("Z") else v
        try:
            t = datetime.fromisoformat(s)
        except ValueError:
            return None
        return t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc)
    return None


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _unix_ms(t: datetime) -> int:
    return (t - _EPOCH) // timedelta(milliseconds=1)


def _json_default(o: Any) -> Any:
    if isinstance(o, (bytes, bytearray)):
        return {"$bytes": base64.b64encode(bytes(o)).decode("ascii")}
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


def _json_object_hook(d: dict[str, Any]) -> Any:
    if len(d) == 1 and isinstance(d.get("$bytes"), str):
        return base64.b64decode(d["$bytes"])
    return d
