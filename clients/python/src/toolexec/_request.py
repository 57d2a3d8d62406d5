"""What one call asks for, and how its last answer becomes a return value or
an exception. Shared by both transports and by the sync and async clients,
so that they cannot disagree."""

from __future__ import annotations

import random
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from . import _trace, _validate
from .canonical import canonicalize
from .errors import AnswerError, ApprovalPending, Busy, Conflict, InDoubt, InvalidRequest, MissingKey, NoAnswer, Rejected, UnknownTool
from .journal import Step, current_step
from .result import CONFLICT, REJECTED, RUNNING, Result

CALL = "call"
COMPENSATE = "compensate"


def new_intent_id() -> str:
    """A fresh emission id (not an idempotency key): 24 hex digits."""
    return secrets.token_hex(12)


@dataclass(frozen=True)
class CallRequest:
    """One emission of a call or a compensation."""

    type: str
    tool: str
    key: str
    tenant: str | None  # None: "default" on Kafka, the token's over HTTP
    args: dict[str, Any]  # canonical (toolexec.canonical.canonicalize)
    wait: float  # seconds
    traceparent: str | None
    intent_id: str
    tracestate: str | None = None


def outcome(req: CallRequest, last: Result | None, note: str = "") -> Result:
    """Returns the final answer, or raises the exception that stands for it:
    Conflict, Rejected (UnknownTool), InDoubt when the last answer is
    pending (ApprovalPending when it awaits a person's approval), NoAnswer
    when there was none."""
    what = f"{req.type} of {req.tool!r} with key {req.key!r}"
    if last is not None and last.busy:
        ra = None if last.retry_after is None else last.retry_after.total_seconds()
        raise Busy(f"{what}: not_executed ({_why(last)}): the executor had no place for it; nothing ran and "
                   f"nothing was recorded. Call again later with the same key (after {ra or 0:g}s), and send "
                   f"less meanwhile", last, ra)
    if last is not None and last.awaiting_approval:
        raise ApprovalPending(f"{what}: waits for a person's approval ({_why(last)}); nothing ran. Keep the key: "
                              f"calling again later with the same key and arguments returns the outcome once a "
                              f"person decided", last)
    if last is None or last.status == RUNNING:
        raise NoAnswer(f"{what}: no final answer within {req.wait:g}s{note}; the call may still be running or "
                       f"queued. Calling again with the same key and arguments is safe", last)
    if not last.terminal:
        raise InDoubt(f"{what}: {last.status} ({_why(last)}): the key is parked in doubt and is being "
                      f"investigated; it will not be executed again. Calling again with the same key and "
                      f"arguments is safe and returns the final answer once it is known", last)
    if last.status == CONFLICT:
        raise Conflict(f"{what}: conflict ({_why(last)}): the key was used with other arguments or another "
                       f"tool; nothing ran. Send the original arguments, or use a new key for a new action", last)
    if last.status == REJECTED:
        if last.error is not None and last.error.code == "unknown_tool":
            raise UnknownTool(f"{what}: rejected ({_why(last)}); client.list_tools() lists the tools this "
                              f"tenant may call (over the gateway)", last)
        raise Rejected(f"{what}: rejected ({_why(last)})", last)
    return last


#: Sends of one call after answers that said the executor had no place for
#: it (as the Go client's MaxBusyRetries): a flood is the caller's to slow
#: down, not to wait out in a loop.
MAX_BUSY_RETRIES = 5


def busy_pause(r: Result, retries: int, left: float) -> float | None:
    """The pause before sending a call again after ``r``, a refusal for want
    of a place: its hint and up to a quarter more (so that refused callers
    do not all come back at once); None when the call must give up (it was
    sent again MAX_BUSY_RETRIES times, or the wait ends first)."""
    hint = 0.0 if r.retry_after is None else r.retry_after.total_seconds()
    pause = hint * (1 + random.random() / 4)
    if retries >= MAX_BUSY_RETRIES or pause >= left:
        return None
    return pause


def resend(req: CallRequest) -> CallRequest:
    """The same call as a new emission: a new intent id, the same key."""
    return replace(req, intent_id=new_intent_id())


def settles(r: Result) -> bool:
    """Whether an answer ends a call's wait: a final one, or one that says
    a person must approve first (waiting longer would not help)."""
    return r.terminal or r.awaiting_approval


def _why(r: Result) -> str:
    if r.error is None:
        return "no error given"
    return f"{r.error.code}: {r.error.message}" if r.error.message else r.error.code


def prepare(type_: str, tool: str, key: str | None, args: Mapping[str, Any] | None, tenant: str | None,
            wait: float | timedelta | None, step: Step | None, traceparent: str | None,
            default_tenant: str | None) -> tuple[CallRequest, Step | None]:
    """Validates a call and resolves its key: ``key=``, else ``step``'s,
    else the key of the journal step whose block is running; no key at all
    is MissingKey. A ``key=`` equal to the running step's key makes the
    call that step's, so its answer is recorded."""
    tool = _validate.tool(tool)
    if step is not None:
        if key is not None and key != step.key:
            raise InvalidRequest(f"key {key!r} is not the key of step {step.name!r} ({step.key!r})")
        key = step.key
    elif key is None:
        step = current_step()
        if step is None:
            raise MissingKey(f"call of {tool!r} without an idempotency key: pass key=, or call it inside "
                             f"`with journal.step(...)`, or take the key from the agent state (toolexec.keys)")
        key = step.key
    else:
        cur = current_step()
        if cur is not None and cur.key == key:
            step = cur
    if tenant is None:
        tenant = default_tenant
    tracestate = None
    if traceparent is None:  # the current OpenTelemetry span's, with the [otel] extra
        traceparent, tracestate = _trace.current()
    req = CallRequest(
        type=type_, tool=tool, key=_validate.key(key),
        tenant=None if tenant is None else _validate.tenant(tenant),
        args=canonicalize(args) if type_ == CALL else {},
        wait=_validate.wait(wait), traceparent=traceparent, intent_id=new_intent_id(), tracestate=tracestate)
    return req, step


def journaled(req: CallRequest, step: Step | None) -> Result | None:
    """The recorded answer when the step is completed already (the call is
    then not sent again); None when the call must be sent."""
    if step is None:
        return None
    if not step.completed:
        step.sending(req.tool, req.args)
        return None
    step.bind_call(req.tool, req.args)
    answer = step.answer
    if answer is None:
        raise InvalidRequest(f"step {step.name!r} was completed without an answer; "
                             f"journal.forget({step.name!r}) to run it again")
    return outcome(req, answer)


def finish(req: CallRequest, step: Step | None, last: Result | None, note: str = "") -> Result:
    """outcome(), and the step records every final answer (also those that
    are raised: a conflict or a rejection is final too)."""
    try:
        res = outcome(req, last, note)
    except AnswerError as e:
        # A refusal for want of a place is no answer of the step's: the
        # step runs when called again.
        if step is not None and e.result is not None and e.result.terminal and not isinstance(e, Busy):
            step.complete(e.result)
        raise
    if step is not None:
        step.complete(res)
    return res
