"""Exceptions of the toolexec client.

Every exception derives from :class:`Error`. Those that carry an answer of
the executor have it in ``.result``:

- :class:`Conflict`: the key was used before with other arguments (or
  another tool). Nothing ran. Send the original arguments, or use a new key.
- :class:`Rejected`: the request was invalid (``.code`` says why:
  ``unknown_tool``, ``invalid_args``, ``oversized``, ...). Nothing ran.
  :class:`UnknownTool` is the ``unknown_tool`` case.
- :class:`InDoubt`: no final answer within ``wait``. The key is parked (a
  ``pending`` answer: the call may have reached the tool and is being
  investigated) or still running. **Calling again with the same key and the
  same arguments is safe**: the tool is never called a second time for the
  key, and the later call gets the final answer once there is one.
  :class:`NoAnswer` is the case where no answer at all came (the call may
  still be running, or the executor is not reachable).
  :class:`ApprovalPending` is the case of a tool that needs a person's
  approval: raised at once, nothing ran, and a person approves or denies
  this key with these arguments.
- :class:`Busy`: the executor (or the gateway) had no place for the call
  now, and the client's own retries, after each ``retry_after``, did not
  find one within the wait. Nothing ran and nothing was recorded: the key is
  free; call again later, and send less meanwhile.

Exceptions without an answer: :class:`InvalidRequest` (refused before
anything was sent), :class:`MissingKey`, :class:`Unauthorized`,
:class:`TransportError` and :class:`ConfigError`.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .result import Result


class Error(Exception):
    """The base of every toolexec exception."""


class AnswerError(Error):
    """An exception that carries the executor's answer in ``result``."""

    def __init__(self, message: str, result: Result | None) -> None:
        super().__init__(message)
        self.result = result

    @property
    def code(self) -> str | None:
        """The answer's ``error.code``, when there is one."""
        if self.result is None or self.result.error is None:
            return None
        return self.result.error.code


class Conflict(AnswerError):
    """The key was used before with other arguments or another tool; the
    tool was not called. ``result.status`` is ``conflict``."""

    result: Result

    def __init__(self, message: str, result: Result) -> None:
        super().__init__(message, result)


class Rejected(AnswerError):
    """The executor or the gateway refused the request as invalid; nothing
    ran. ``code`` is the reject reason (docs/wire-format.md)."""

    result: Result

    def __init__(self, message: str, result: Result) -> None:
        super().__init__(message, result)


class UnknownTool(Rejected):
    """The tool is not configured, or not visible to this tenant."""


class InDoubt(AnswerError):
    """No final answer within the wait. The key is parked in doubt (the
    answer so far, ``pending``, is in ``result``) or still running; it is
    never executed again for this key. Calling again later with the same key
    and arguments is safe and returns the final answer once it is known."""


class Busy(AnswerError):
    """The executor had no place for the call (its tenant held its share of
    the tool, ``over_share``; or the tool was full, ``queue_full``), or the
    gateway refused it for the tenant's limits (``429``), on every attempt
    the client made within the wait. Nothing ran and nothing was recorded:
    the key is free, and calling again later with it runs the call as a
    first call. ``retry_after`` (seconds) is the last hint, when one came;
    ``result`` the executor's last answer, when one came. Not recorded by
    a journal step: the step runs when called again."""

    def __init__(self, message: str, result: Result | None, retry_after: float | None) -> None:
        super().__init__(message, result)
        self.retry_after = retry_after


class ApprovalPending(InDoubt):
    """The tool needs a person's approval of this key with these arguments
    (``approval: required``), and nothing ran yet. Raised at once: waiting
    longer would not help. Keep the key (a journal step keeps it): calling
    again later with the same key and arguments returns the outcome once a
    person decided: the call's, or ``failed`` (``approval_denied``), or
    ``not_executed`` (``approval_lapsed``, no one decided in time). Never use
    a new key for this action: that asks for another approval.
    ``approval_until`` is when the request lapses."""

    @property
    def approval_until(self) -> datetime | None:
        return None if self.result is None else self.result.approval_until


class NoAnswer(InDoubt):
    """No final answer and no sign of doubt within the wait: the call may
    still be running or queued. ``result`` is None, or the gateway's
    ``running`` answer. The same guidance as :class:`InDoubt`."""

    def __init__(self, message: str, result: Result | None = None) -> None:
        super().__init__(message, result)


class InvalidRequest(Error, ValueError):
    """The request was refused before anything was sent: a bad key, tenant,
    tool name or arguments that the executor would reject."""


class MissingKey(InvalidRequest):
    """A tool was called with no idempotency key: no ``key=``, no journal
    step, no key in the agent state. A key is never made up on the spot,
    since a fresh key on a retry is exactly the duplicate this prevents."""


class Unauthorized(Error):
    """The gateway refused the token (HTTP 401)."""


class TransportError(Error):
    """The transport failed. ``sent`` says whether the request may have
    reached the executor; either way, calling again with the same key and
    arguments is safe."""

    def __init__(self, message: str, *, sent: bool) -> None:
        super().__init__(message)
        self.sent = sent


class ConfigError(Error, ValueError):
    """The client's configuration is wrong (a missing topic, a bad
    property file, an unusable option)."""
