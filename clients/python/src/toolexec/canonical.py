"""Canonical arguments, as the executor computes them (wire/canonical.go).

Duplicates are recognised by the tool name and the SHA-256 of the canonical
arguments, so two encodings of one call must give the same bytes: map keys
are sorted (by their UTF-8 bytes, which is code point order), a float with an
integral value is that integer (``120.0`` is ``120``, ``-0.0`` is ``0``),
integers take their shortest msgpack form and other floats are float64.

The msgpack writer here is a small one of our own on purpose: keys are
computed without the ``[kafka]`` extra (the HTTP transport needs no msgpack),
and its output is checked byte for byte against the vectors that the Go code
writes (``wire/testdata/client-vectors.json``).
"""

from __future__ import annotations

import hashlib
import math
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from .errors import InvalidRequest

#: Nesting the executor accepts (wire.maxArgsDepth): the top-level map is
#: depth 0, and a value deeper than this is ``invalid_args``.
MAX_ARGS_DEPTH = 32

_INT64_MIN = -(1 << 63)
_UINT64_MAX = (1 << 64) - 1
_TWO63 = float(1 << 63)
_TWO64 = float(1 << 64)

Canonical = Any
"""A canonical value: None, bool, int, float, str, bytes, list or dict."""


def canonicalize(args: Mapping[str, Any] | None) -> dict[str, Canonical]:
    """Returns args in canonical form: dicts with sorted string keys,
    integral floats as ints, tuples as lists.

    Raises InvalidRequest for what the executor would reject as
    ``invalid_args`` (NaN, infinities, nesting deeper than 32) and for values
    that are not JSON-like (a set, a datetime, a non-string map key, an
    integer outside [-2**63, 2**64)).
    """
    if args is None:
        return {}
    if not isinstance(args, Mapping):
        raise InvalidRequest(f"args must be a mapping with string keys, not {type(args).__name__}")
    out = _normalise(args, 0, "args")
    assert isinstance(out, dict)
    return out


def canonical_bytes(args: Mapping[str, Any] | None) -> bytes:
    """The canonical msgpack bytes of args (what the executor hashes)."""
    buf = bytearray()
    _encode(canonicalize(args), buf)
    return bytes(buf)


def args_hash(args: Mapping[str, Any] | None) -> bytes:
    """SHA-256 of the canonical bytes: the executor's ``args_hash``."""
    return hashlib.sha256(canonical_bytes(args)).digest()


def _normalise(v: Any, depth: int, path: str) -> Canonical:
    if depth > MAX_ARGS_DEPTH:
        raise InvalidRequest(f"{path}: nested deeper than {MAX_ARGS_DEPTH}")
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v)
    if isinstance(v, int):
        return _check_int(v, path)
    if isinstance(v, float):
        return _normalise_float(v, path)
    if isinstance(v, Mapping):
        return _normalise_map(v, depth, path)
    if isinstance(v, Sequence):
        return [_normalise(x, depth + 1, f"{path}[{i}]") for i, x in enumerate(v)]
    raise InvalidRequest(f"{path}: a {type(v).__name__} is not a JSON-like value")


def _normalise_map(m: Mapping[Any, Any], depth: int, path: str) -> dict[str, Canonical]:
    for k in m:
        if not isinstance(k, str):
            raise InvalidRequest(f"{path}: map key {k!r} is a {type(k).__name__}, not a string")
    return {k: _normalise(m[k], depth + 1, f"{path}.{k}") for k in sorted(m)}


def _check_int(i: int, path: str) -> int:
    if not _INT64_MIN <= i <= _UINT64_MAX:
        raise InvalidRequest(f"{path}: integer {i} is outside [-2**63, 2**64)")
    return i


def _normalise_float(f: float, path: str) -> int | float:
    if math.isnan(f) or math.isinf(f):
        raise InvalidRequest(f"{path}: NaN or infinite number")
    # The same ranges as normaliseFloat in Go: int64 in [-2^63, 2^63),
    # uint64 in [2^63, 2^64); a larger integral float stays a float.
    if f == math.trunc(f) and -_TWO63 <= f < _TWO64:
        return int(f)
    return f


# ------------------------------------------------------------ msgpack writer


def _encode(v: Canonical, buf: bytearray) -> None:
    if v is None:
        buf.append(0xC0)
    elif v is True:
        buf.append(0xC3)
    elif v is False:
        buf.append(0xC2)
    elif isinstance(v, int):
        _encode_int(v, buf)
    elif isinstance(v, float):
        buf.append(0xCB)
        buf += struct.pack(">d", v)
    elif isinstance(v, str):
        _encode_str(v.encode("utf-8"), buf)
    elif isinstance(v, bytes):
        _encode_bin(v, buf)
    elif isinstance(v, list):
        _encode_len(len(v), buf, 0x90, 0xDC, 0xDD, fix_max=15)
        for x in v:
            _encode(x, buf)
    elif isinstance(v, dict):
        _encode_len(len(v), buf, 0x80, 0xDE, 0xDF, fix_max=15)
        for k, x in v.items():
            _encode_str(k.encode("utf-8"), buf)
            _encode(x, buf)
    else:  # pragma: no cover - canonicalize admits nothing else
        raise InvalidRequest(f"cannot encode {type(v).__name__}")


def _encode_int(i: int, buf: bytearray) -> None:
    """The shortest msgpack form, as vmihailenco/msgpack's UseCompactInts."""
    if 0 <= i <= 0x7F or -32 <= i < 0:
        buf += struct.pack(">b", i) if i < 0 else bytes([i])
    elif i >= 0:
        for code, fmt, top in ((0xCC, ">B", 0xFF), (0xCD, ">H", 0xFFFF), (0xCE, ">I", 0xFFFFFFFF)):
            if i <= top:
                buf.append(code)
                buf += struct.pack(fmt, i)
                return
        buf.append(0xCF)
        buf += struct.pack(">Q", i)
    else:
        for code, fmt, bottom in ((0xD0, ">b", -0x80), (0xD1, ">h", -0x8000), (0xD2, ">i", -0x80000000)):
            if i >= bottom:
                buf.append(code)
                buf += struct.pack(fmt, i)
                return
        buf.append(0xD3)
        buf += struct.pack(">q", i)


def _encode_str(b: bytes, buf: bytearray) -> None:
    n = len(b)
    if n <= 31:
        buf.append(0xA0 | n)
    elif n <= 0xFF:
        buf += bytes([0xD9, n])
    elif n <= 0xFFFF:
        buf.append(0xDA)
        buf += struct.pack(">H", n)
    else:
        buf.append(0xDB)
        buf += struct.pack(">I", n)
    buf += b


def _encode_bin(b: bytes, buf: bytearray) -> None:
    n = len(b)
    if n <= 0xFF:
        buf += bytes([0xC4, n])
    elif n <= 0xFFFF:
        buf.append(0xC5)
        buf += struct.pack(">H", n)
    else:
        buf.append(0xC6)
        buf += struct.pack(">I", n)
    buf += b


def _encode_len(n: int, buf: bytearray, fix: int, c16: int, c32: int, fix_max: int) -> None:
    if n <= fix_max:
        buf.append(fix | n)
    elif n <= 0xFFFF:
        buf.append(c16)
        buf += struct.pack(">H", n)
    else:
        buf.append(c32)
        buf += struct.pack(">I", n)
