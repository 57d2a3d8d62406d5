"""toolexec: run LLM-agent tool calls at most once per idempotency key.

::

    import toolexec
    from toolexec import keys

    client = toolexec.Client.http("http://127.0.0.1:8080", token)
    r = client.call("payments.refund", key=keys.composite(thread_id, "refund", args), args=args)
    print(r.status, r.result, r.was_replay)

See ``clients/python/README.md`` for the whole API.
"""

from . import keys
from .aio import AsyncClient
from .canonical import args_hash, canonical_bytes, canonicalize
from .client import Client, ToolInfo
from .errors import (
    AnswerError,
    ApprovalPending,
    Busy,
    ConfigError,
    Conflict,
    Error,
    InDoubt,
    InvalidRequest,
    MissingKey,
    NoAnswer,
    Rejected,
    TransportError,
    Unauthorized,
    UnknownTool,
)
from .journal import Journal, Step, current_step
from .kafka_config import load_properties
from .result import (
    APPROVAL_DENIED,
    APPROVAL_LAPSED,
    AWAITING_APPROVAL,
    COMPENSATED,
    COMPENSATION_FAILED,
    COMPENSATION_PENDING,
    CONFLICT,
    FAILED,
    NOT_EXECUTED,
    OVER_SHARE,
    PENDING,
    QUEUE_FULL,
    REJECTED,
    RESOLVED,
    RUNNING,
    SUCCEEDED,
    ErrorInfo,
    Result,
)
from .routing import murmur2, owner_partition, routing_key
from .tool import AsyncTool, Tool

__version__ = "0.2.0"

__all__ = [
    "APPROVAL_DENIED", "APPROVAL_LAPSED", "AWAITING_APPROVAL", "AnswerError", "ApprovalPending", "AsyncClient", "AsyncTool", "Busy", "Client", "COMPENSATED", "COMPENSATION_FAILED",
    "COMPENSATION_PENDING", "CONFLICT", "ConfigError", "Conflict", "Error", "ErrorInfo", "FAILED",
    "InDoubt", "InvalidRequest", "Journal", "MissingKey", "NOT_EXECUTED", "NoAnswer", "OVER_SHARE", "PENDING", "QUEUE_FULL",
    "REJECTED", "RESOLVED", "RUNNING", "Rejected", "Result", "SUCCEEDED", "Step", "Tool", "ToolInfo",
    "TransportError", "Unauthorized", "UnknownTool", "args_hash", "canonical_bytes", "canonicalize",
    "current_step", "keys", "load_properties", "murmur2", "owner_partition", "routing_key",
]
