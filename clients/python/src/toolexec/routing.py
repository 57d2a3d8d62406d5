"""Routing of intents to the partition that owns their key (wire/route.go).

An intent's Kafka key is ``<tenant>/<key>`` and its owner partition is
Kafka's Java default: ``(murmur2(key) & 0x7fffffff) % partitions``. The
executor forwards an intent that lands elsewhere, so producing to the owner
is an optimisation (one hop less), never a condition of safety.
"""

from __future__ import annotations

_M32 = 0xFFFFFFFF
_SEED = 0x9747B28C
_M = 0x5BD1E995
_R = 24


def routing_key(tenant: str, key: str) -> str:
    """The Kafka record key of an intent: ``<tenant>/<key>``."""
    return f"{tenant}/{key}"


def murmur2(data: bytes) -> int:
    """Kafka's ``org.apache.kafka.common.utils.Utils.murmur2``, as uint32."""
    n = len(data)
    h = (_SEED ^ n) & _M32
    i = 0
    while n - i >= 4:
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * _M) & _M32
        k ^= k >> _R
        k = (k * _M) & _M32
        h = (h * _M) & _M32
        h ^= k
        i += 4
    rest = n - i
    if rest == 3:
        h ^= data[i + 2] << 16
    if rest >= 2:
        h ^= data[i + 1] << 8
    if rest >= 1:
        h ^= data[i]
        h = (h * _M) & _M32
    h ^= h >> 13
    h = (h * _M) & _M32
    h ^= h >> 15
    return h


def owner_partition(routing_key: str | bytes, partitions: int) -> int:
    """The partition that owns routing_key among ``partitions`` partitions."""
    if partitions <= 0:
        raise ValueError("owner_partition: partitions must be positive")
    data = routing_key.encode("utf-8") if isinstance(routing_key, str) else routing_key
    return (murmur2(data) & 0x7FFFFFFF) % partitions
