"""Idempotency keys that survive a retry, a resume and a crash.

A key must be chosen before the call, kept in the agent's persisted state,
and sent again on every retry. Model tool-call ids (``call_id``,
``tool_use.id``) do not qualify: they are minted anew when the model is
asked again after a crash. Two ways to get a good key:

- :func:`composite`: derive it from what identifies the logical call (the
  thread, the node or step, the canonical arguments). The same inputs give
  the same key in any process, so nothing needs to be stored, and a model
  that re-emits the same call in the same step gets the replay.
- :func:`in_state`: make a random key once and keep it in the agent state
  (for example a LangGraph state field), in a step that is checkpointed
  before the step that calls the tool.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, MutableMapping
from typing import Any

from . import _validate
from .canonical import canonical_bytes
from .errors import InvalidRequest, MissingKey

_COMPOSITE_DOMAIN = b"toolexec/composite-key/v1"
#: Hex digits of SHA-256 kept in a composite key: 160 bits, far beyond any
#: chance of two logical calls colliding, and short enough for logs.
COMPOSITE_HEX_DIGITS = 40
#: Longest name used as a readable prefix of an in_state key.
_MAX_PREFIX = 64


def composite(thread_id: str, node: str, args: Mapping[str, Any] | None = None) -> str:
    """A stable key for one logical call: ``ck1_`` and 40 hex digits of the
    SHA-256 of the thread id, the node (or step) name and the canonical
    arguments (so ``{"amount": 120}`` and ``{"amount": 120.0}`` give one
    key, as they are one call to the executor).

    A node that legitimately makes the same call twice in one thread must
    say so in ``node`` (``"refund#2"``); otherwise the second is a replay.
    """
    if not isinstance(thread_id, str) or not thread_id:
        raise InvalidRequest("composite: thread_id must be a non-empty string")
    if not isinstance(node, str) or not node:
        raise InvalidRequest("composite: node must be a non-empty string")
    h = hashlib.sha256()
    for part in (_COMPOSITE_DOMAIN, thread_id.encode("utf-8"), node.encode("utf-8"), canonical_bytes(args)):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return "ck1_" + h.hexdigest()[:COMPOSITE_HEX_DIGITS]


def field(name: str) -> str:
    """The state field that holds the key named ``name``:
    ``{name}_idempotency_key``."""
    if not isinstance(name, str) or not name:
        raise InvalidRequest("the key's name must be a non-empty string")
    return f"{name}_idempotency_key"


def in_state(state: Any, name: str) -> str:
    """Returns the key ``{name}_idempotency_key`` of ``state``, creating it
    (``{name}-`` and a random UUID) and storing it in ``state`` when absent.

    ``state`` is a mutable mapping (a dict, a TypedDict state) or an object
    with attributes (a dataclass, a pydantic model). Storing it in the dict
    is not enough with frameworks whose steps return updates (LangGraph):
    return ``{keys.field(name): key}`` from the step that created it, so the
    key is checkpointed before the step that calls the tool runs.
    """
    f = field(name)
    existing = lookup(state, name)
    if existing is not None:
        return existing
    prefix = name if len(name) <= _MAX_PREFIX else "k"
    k = _validate.key(f"{prefix}-{uuid.uuid4().hex}")
    if isinstance(state, MutableMapping):
        state[f] = k
    else:
        try:
            setattr(state, f, k)
        except AttributeError as e:
            raise InvalidRequest(f"in_state: cannot store {f} in a {type(state).__name__}: {e}") from None
    return k


def lookup(state: Any, name: str) -> str | None:
    """The key ``{name}_idempotency_key`` of ``state``, or None. Never
    creates one."""
    f = field(name)
    v = state.get(f) if isinstance(state, Mapping) else getattr(state, f, None)
    if v is None or v == "":
        return None
    return _validate.key(v)


def from_state(state: Any, name: str) -> str:
    """The key ``{name}_idempotency_key`` of ``state``; raises MissingKey
    when it is not there (it must have been stored by an earlier,
    checkpointed step: a key made up at the call is a new key on a retry)."""
    k = lookup(state, name)
    if k is None:
        raise MissingKey(
            f"no {field(name)} in the agent state: create it with keys.in_state(state, {name!r}) "
            f"in a step that runs (and is checkpointed) before the call")
    return k
