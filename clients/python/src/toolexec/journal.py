"""A local journal of steps and their keys, in SQLite.

``with journal.step("refund-7") as step:`` gives the step's idempotency key,
the same one after a crash and a restart of the process, because the key is
written (and synced) before the body runs:

1. On entry the step is recorded ``in_progress`` with a new random key, or,
   when it was recorded before, its stored key is returned. A step found
   ``in_progress`` was interrupted (a crash, an exception): ``step.resumed``
   is true and its call must be sent again **under the same key**: the
   executor answers with the replay, or with the in-doubt status. It is never
   sent under a new key.
2. After the call, the answer is recorded and the step is ``completed``:
   by a decorated tool (``@client.tool``) called inside the block, by
   ``client.call(..., step=step)``, or by ``step.complete(result)``.
   A step that is already completed answers such calls from the journal
   without sending anything (``Result.journaled``), so a completed step is
   never run again, even after the executor's retention has passed.
3. On leaving the block: an exception that carries a final answer
   (:class:`~toolexec.Conflict`, :class:`~toolexec.Rejected`) completes the
   step with it; any other exception (:class:`~toolexec.InDoubt`, a crash,
   your own) leaves it ``in_progress``; a normal exit completes it, unless
   a call of the step got no final answer (an :class:`~toolexec.InDoubt`
   that the block caught, or a call sent in an earlier entry and not sent
   again): then it stays ``in_progress``.

One step is one call: one tool, one set of arguments. Its key is the call's
idempotency key, and the journal keeps the call's tool and the SHA-256 of its
canonical arguments (as the executor computes them, so ``{"a": 1, "b": 120}``
and ``{"b": 120.0, "a": 1}`` are one call). A call of the step with another
tool or other arguments raises :class:`~toolexec.Conflict` and sends nothing,
as the executor answers the same key with other arguments: the journal never
answers one call with the recorded answer of another.

A step recorded by a version of this package that kept no hash (toolexec
0.1.0) has its tool but not its arguments: its next call is taken as the
step's own (its hash is recorded, with a warning), and every later call is
checked. An ``in_progress`` step is sent to the executor, which checks the
arguments against the key's record; a ``completed`` one is answered from the
journal, as before.

The journal is safe for concurrent use by threads and by several processes
(SQLite locking). Steps are kept until :meth:`Journal.forget`.
"""

from __future__ import annotations

import contextvars
import sqlite3
import threading
import time
import uuid
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from . import _validate
from .canonical import args_hash
from .errors import AnswerError, Conflict, InvalidRequest
from .result import CONFLICT, ErrorInfo, Result

IN_PROGRESS = "in_progress"
COMPLETED = "completed"

#: How long a writer waits for another process's lock on the file.
_BUSY_TIMEOUT_S = 30.0
#: Longest step name (it is also a readable prefix of the key).
MAX_STEP_NAME = 200

_SCHEMA = """
CREATE TABLE IF NOT EXISTS toolexec_steps (
    name         TEXT PRIMARY KEY,
    key          TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('in_progress', 'completed')),
    tool         TEXT,
    args_hash    TEXT,
    answer       TEXT,
    entries      INTEGER NOT NULL,
    created_at   REAL NOT NULL,
    updated_at   REAL NOT NULL
)
"""
#: The column added in toolexec 0.2.0; _add_args_hash adds it to older files.
_ARGS_HASH_COLUMN = "ALTER TABLE toolexec_steps ADD COLUMN args_hash TEXT"
_SELECT = "SELECT name, key, status, tool, args_hash, answer, entries FROM toolexec_steps"

_current: contextvars.ContextVar[Step | None] = contextvars.ContextVar("toolexec_step", default=None)


def current_step() -> Step | None:
    """The innermost step whose ``with`` block is running in this context
    (thread or asyncio task), or None."""
    return _current.get()


@dataclass
class StepRecord:
    """A step as stored in the journal."""

    name: str
    key: str
    status: str
    tool: str | None
    #: SHA-256 of the call's canonical arguments, hex; None before the
    #: step's first call, and for a step written by toolexec 0.1.0.
    args_hash: str | None
    answer: Result | None
    entries: int


class Journal:
    """A SQLite file of steps. ``Journal(path)`` creates it when missing."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE),
        # so an entry is durable when step() returns, before the call.
        self._db = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.execute(_SCHEMA)
        self._add_args_hash()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def step(self, name: str, *, key: str | None = None) -> Step:
        """The step ``name``, to use as ``with journal.step(name) as step``.

        ``key`` chooses the key of a new step (default: ``name-`` and a
        random UUID); for a step recorded before it must be the stored one.
        Entering the block records the step as described in the module doc.
        """
        if not isinstance(name, str) or not name or len(name) > MAX_STEP_NAME:
            raise InvalidRequest(f"a step name must be a string of 1 to {MAX_STEP_NAME} characters")
        if key is not None:
            _validate.key(key)
        return Step(self, name, key)

    def get(self, name: str) -> StepRecord | None:
        """The stored step, or None."""
        with self._lock:
            row = self._db.execute(_SELECT + " WHERE name = ?", (name,)).fetchone()
        return _record(row) if row else None

    def steps(self) -> list[StepRecord]:
        """Every stored step, oldest first."""
        with self._lock:
            rows = self._db.execute(_SELECT + " ORDER BY created_at, name").fetchall()
        return [_record(r) for r in rows]

    def forget(self, name: str) -> None:
        """Deletes a step (its key is gone: enter it again for a new one)."""
        with self._lock, self._tx():
            self._db.execute("DELETE FROM toolexec_steps WHERE name = ?", (name,))

    def _add_args_hash(self) -> None:
        """Adds the args_hash column to a journal written by toolexec 0.1.0
        (its steps keep a NULL hash). Checked again under the write lock:
        another process may be opening the same old file."""
        if self._has_args_hash():
            return
        with self._lock, self._tx():
            if not self._has_args_hash():
                self._db.execute(_ARGS_HASH_COLUMN)

    def _has_args_hash(self) -> bool:
        return any(col[1] == "args_hash" for col in self._db.execute("PRAGMA table_info(toolexec_steps)"))

    # ---- used by Step

    def _enter(self, name: str, key: str | None) -> StepRecord:
        now = time.time()
        with self._lock, self._tx():
            row = self._db.execute(_SELECT + " WHERE name = ?", (name,)).fetchone()
            if row is None:
                k = key or _validate.key(f"{name[:64]}-{uuid.uuid4().hex}")
                self._db.execute(
                    "INSERT INTO toolexec_steps (name, key, status, entries, created_at, updated_at) "
                    "VALUES (?, ?, 'in_progress', 1, ?, ?)", (name, k, now, now))
                return StepRecord(name, k, IN_PROGRESS, None, None, None, 1)
            rec = _record(row)
            if key is not None and key != rec.key:
                raise InvalidRequest(f"step {name!r} was recorded with key {rec.key!r}, not {key!r}")
            self._db.execute("UPDATE toolexec_steps SET entries = entries + 1, updated_at = ? WHERE name = ?",
                             (now, name))
            rec.entries += 1
            return rec

    def _bind(self, name: str, tool: str, hash_hex: str) -> tuple[str | None, str | None]:
        """Records (tool, hash_hex) as the step's call when it has none yet,
        or the hash alone when the step has this tool and no hash (written
        by toolexec 0.1.0). Returns the tool and hash stored before, read
        under the write lock, so two processes cannot both bind a step."""
        with self._lock, self._tx():
            row = self._db.execute("SELECT tool, args_hash FROM toolexec_steps WHERE name = ?", (name,)).fetchone()
            old_tool, old_hash = row if row is not None else (None, None)
            if old_tool is None or (old_tool == tool and old_hash is None):
                self._db.execute("UPDATE toolexec_steps SET tool = ?, args_hash = ?, updated_at = ? WHERE name = ?",
                                 (tool, hash_hex, time.time(), name))
            return old_tool, old_hash

    def _complete(self, name: str, answer: Result | None) -> None:
        doc = answer.to_json() if answer is not None else None
        with self._lock, self._tx():
            self._db.execute(
                "UPDATE toolexec_steps SET status = 'completed', answer = ?, updated_at = ? WHERE name = ?",
                (doc, time.time(), name))

    @contextmanager
    def _tx(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


def _record(row: tuple[str, str, str, str | None, str | None, str | None, int]) -> StepRecord:
    name, key, status, tool, hash_hex, answer, entries = row
    return StepRecord(name, key, status, tool, hash_hex, Result.from_json(answer) if answer else None, entries)


class Step:
    """One step of a journal; see the module doc. ``key`` is valid once the
    ``with`` block is entered."""

    def __init__(self, journal: Journal, name: str, key: str | None) -> None:
        self.journal = journal
        self.name = name
        self._want_key = key
        self._rec: StepRecord | None = None
        self._token: contextvars.Token[Step | None] | None = None
        self._unanswered = False
        self.resumed = False

    def __enter__(self) -> Step:
        self._rec = self.journal._enter(self.name, self._want_key)
        self.resumed = self._rec.status == IN_PROGRESS and self._rec.entries > 1
        # A call sent in an earlier entry without a final answer is still
        # owed one: leaving the block without it keeps the step open.
        self._unanswered = self._rec.status == IN_PROGRESS and self._rec.tool is not None
        self._token = _current.set(self)
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        if self._token is not None:
            _current.reset(self._token)
            self._token = None
        if self.completed:
            return
        if e is None:
            if not self._unanswered:
                self.complete(None)
        elif isinstance(e, AnswerError) and e.result is not None and e.result.terminal and not e.result.journaled \
                and not e.result.busy:
            # A journaled answer (the journal's own conflict) is no answer
            # of the executor to the step's call, and a refusal for want of
            # a place ran nothing: the step stays as it was.
            self.complete(e.result)

    @property
    def _record(self) -> StepRecord:
        if self._rec is None:
            raise InvalidRequest(f"step {self.name!r} is used outside its with block")
        return self._rec

    @property
    def key(self) -> str:
        """The step's idempotency key."""
        return self._record.key

    @property
    def status(self) -> str:
        """``in_progress`` or ``completed``."""
        return self._record.status

    @property
    def completed(self) -> bool:
        return self._record.status == COMPLETED

    @property
    def answer(self) -> Result | None:
        """The recorded answer of a completed step (``journaled`` set)."""
        a = self._record.answer
        return a.with_journaled() if a is not None else None

    def bind_call(self, tool: str, args: Mapping[str, Any] | None) -> None:
        """Records the step's call: its tool and the hash of its canonical
        arguments. A step is one call, so a call of another tool or with
        other arguments raises :class:`~toolexec.Conflict` (the journal's
        own answer, ``journaled`` set; the step is left as it was)."""
        rec = self._record
        hash_hex = args_hash(args).hex()
        if rec.tool == tool and rec.args_hash == hash_hex:
            return
        old_tool, old_hash = self.journal._bind(self.name, tool, hash_hex)
        if old_tool is not None and (old_tool != tool or old_hash not in (None, hash_hex)):
            raise self._conflict(old_tool, tool)
        if old_tool is not None and old_hash is None:
            warnings.warn(f"journal step {self.name!r} was recorded by toolexec 0.1.0, without the hash of its "
                          f"arguments: this call's arguments are taken as the step's, and later calls are checked "
                          f"against them", UserWarning, stacklevel=2)
        rec.tool, rec.args_hash = tool, hash_hex

    def _conflict(self, recorded_tool: str, tool: str) -> Conflict:
        rec = self._record
        what = "other arguments" if recorded_tool == tool else f"tool {tool!r}"
        if rec.status == COMPLETED:
            how = (f"journal.forget({self.name!r}) first to run the step anew under a new key (the tool then "
                   f"runs again)")
        else:
            how = (f"its call has no final answer yet: do not forget the step before the call under key "
                   f"{rec.key!r} is settled, it may have run")
        msg = (f"journal step {self.name!r} is one call of {recorded_tool!r} with the arguments it was first sent "
               f"with; this call has {what}, so nothing was sent. Send the step's original arguments, or give "
               f"this call a step of its own (another name); or {how}")
        answer = Result(status=CONFLICT, error=ErrorInfo("args_mismatch", msg), key=rec.key, tool=tool,
                        journaled=True)
        return Conflict(msg, answer)

    def sending(self, tool: str, args: Mapping[str, Any] | None) -> None:
        """Called by the client before it sends the step's call: binds the
        call (:meth:`bind_call`) and notes that an answer is owed, so that
        leaving the block after an :class:`~toolexec.InDoubt` that was
        caught keeps the step ``in_progress`` (it is sent again next time,
        under its key)."""
        self.bind_call(tool, args)
        self._unanswered = True

    def complete(self, answer: Result | None) -> None:
        """Records the answer and marks the step completed."""
        rec = self._record
        self.journal._complete(self.name, answer)
        rec.status = COMPLETED
        rec.answer = answer
        self._unanswered = False
