"""Wire contract v1 of the tool executor, re-implemented from
docs/wire-format.md in plain Python (msgpack + hashlib only).

Nothing here imports or calls Go code: the conformance tests compare what
the executor does with what these functions say it should do.
"""

import hashlib
import math
import struct

import msgpack

VERSION = 1
TERMINAL_EXCLUDED = ("pending", "compensation_pending")

# Reject reason codes (codes/codes.go).
REASONS = {
    "undecodable", "unsupported_version", "missing_field", "invalid_field",
    "oversized", "wrong_tenant", "key_mismatch", "unknown_tool",
    "resolve_not_allowed", "bad_reply_to", "invalid_args",
    "deadline_exceeded", "invalid_command",
}

# Event kinds (saga/event.go) and saga statuses (saga/status.go).
EV_STARTED, EV_OUTCOME, EV_REPLAYED, EV_COALESCED, EV_WAITING, EV_CONFLICTED, \
    EV_RESOLVED, EV_COMPENSATION_STARTED, EV_COMPENSATION_OUTCOME, EV_EXPIRED = range(1, 11)
ST_NONE, ST_STARTED, ST_SUCCEEDED, ST_FAILED, ST_UNKNOWN, ST_NOT_EXECUTED, \
    ST_COMPENSATING, ST_COMPENSATED, ST_COMPENSATION_FAILED, ST_COMPENSATION_UNKNOWN = range(0, 10)

_M32 = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's org.apache.kafka.common.utils.Utils.murmur2, as uint32."""
    m, r = 0x5BD1E995, 24
    n = len(data)
    h = (0x9747B28C ^ n) & _M32
    i = 0
    while n - i >= 4:
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * m) & _M32
        k ^= k >> r
        k = (k * m) & _M32
        h = (h * m) & _M32
        h ^= k
        i += 4
    rest = n - i
    if rest == 3:
        h ^= data[i + 2] << 16
    if rest >= 2:
        h ^= data[i + 1] << 8
    if rest >= 1:
        h ^= data[i]
        h = (h * m) & _M32
    h ^= h >> 13
    h = (h * m) & _M32
    h ^= h >> 15
    return h


def owner_partition(routing_key: str, partitions: int) -> int:
    """The partition that owns a routing key (Java's default partitioner)."""
    return (murmur2(routing_key.encode()) & 0x7FFFFFFF) % partitions


def routing_key(tenant: str, key: str) -> str:
    return f"{tenant}/{key}"


def canonical(value):
    """Normalise args as wire.CanonicalArgs does: integral floats become
    ints, maps get sorted keys (recursively)."""
    if isinstance(value, dict):
        return {k: canonical(value[k]) for k in sorted(value)}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise ValueError("NaN or infinite number")
        if value == math.trunc(value) and -9.2e18 <= value <= 9.2e18:
            return int(value)
    return value


def canonical_bytes(args: dict) -> bytes:
    """The canonical msgpack bytes of args (sorted keys, compact ints)."""
    return msgpack.packb(canonical(args or {}))


def args_hash(args: dict) -> bytes:
    return hashlib.sha256(canonical_bytes(args)).digest()


def downstream_key(tenant: str, tool: str, key: str) -> str:
    """The Idempotency-Key header the executor sends (tools/downstream_key.go)."""
    h = hashlib.sha256()
    for part in ("toolexec/downstream-key/v1", tenant, tool, key):
        b = part.encode()
        h.update(struct.pack(">Q", len(b)))
        h.update(b)
    return "tk1_" + h.digest()[:20].hex()


def call_downstream_key(tenant: str, tool: str, key: str, attempt: int, called_at: int) -> str:
    """The Idempotency-Key of one call (saga/downstream.go): a new one for
    every call of a key, from the answer's `attempt` and
    `original_called_at`."""
    h = hashlib.sha256()
    for part in ("toolexec/downstream-key/v2", tenant, tool, key, str(attempt), str(called_at)):
        b = part.encode()
        h.update(struct.pack(">Q", len(b)))
        h.update(b)
    return "tk2_" + h.digest()[:20].hex()


def intent(id, tenant, key, tool, args=None, type="call", **extra):
    """An intent map as docs/wire-format.md describes it."""
    m = {"v": VERSION, "type": type, "id": id, "tenant": tenant, "key": key}
    if tool is not None:
        m["tool"] = tool
    if args is not None:
        m["args"] = args
    m.update(extra)
    return m


def pack(m) -> bytes:
    return msgpack.packb(m)


def unpack(b: bytes):
    return msgpack.unpackb(b, raw=False)


def is_terminal(status: str) -> bool:
    return status not in TERMINAL_EXCLUDED
