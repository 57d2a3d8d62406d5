import dataclasses
import re

import pytest

from toolexec import InvalidRequest, MissingKey, keys


def test_composite_is_stable_and_canonical():
    a = keys.composite("thread-1", "refund", {"amount": 120, "currency": "EUR"})
    assert re.fullmatch(r"ck1_[0-9a-f]{40}", a)
    assert a == keys.composite("thread-1", "refund", {"currency": "EUR", "amount": 120.0})
    # A known value: the derivation must never change (keys outlive releases).
    assert a == keys.composite("thread-1", "refund", {"amount": 120, "currency": "EUR"})
    assert keys.composite("t", "n", {}) == "ck1_" + _expected("t", "n", b"\x80")


def _expected(thread, node, canon):
    import hashlib
    h = hashlib.sha256()
    for part in (b"toolexec/composite-key/v1", thread.encode(), node.encode(), canon):
        h.update(len(part).to_bytes(8, "big"))
        h.update(part)
    return h.hexdigest()[:40]


def test_composite_differs_by_every_input():
    base = keys.composite("t1", "refund", {"amount": 5})
    assert base != keys.composite("t2", "refund", {"amount": 5})
    assert base != keys.composite("t1", "refund#2", {"amount": 5})
    assert base != keys.composite("t1", "refund", {"amount": 6})
    # length prefixes: moving a byte between fields changes the key
    assert keys.composite("ab", "c", {}) != keys.composite("a", "bc", {})


def test_composite_refuses_empty_ids_and_bad_args():
    with pytest.raises(InvalidRequest):
        keys.composite("", "n", {})
    with pytest.raises(InvalidRequest):
        keys.composite("t", "", {})
    with pytest.raises(InvalidRequest):
        keys.composite("t", "n", {"x": float("nan")})


def test_in_state_creates_once_and_stores_in_a_dict():
    state = {}
    k = keys.in_state(state, "refund")
    assert state["refund_idempotency_key"] == k
    assert k.startswith("refund-")
    assert keys.in_state(state, "refund") == k
    assert keys.in_state({"refund_idempotency_key": "given"}, "refund") == "given"
    assert keys.field("refund") == "refund_idempotency_key"


def test_in_state_stores_on_an_object():
    @dataclasses.dataclass
    class S:
        refund_idempotency_key: str | None = None

    s = S()
    k = keys.in_state(s, "refund")
    assert s.refund_idempotency_key == k
    assert keys.in_state(s, "refund") == k


def test_in_state_on_a_frozen_object_is_a_clear_error():
    @dataclasses.dataclass(frozen=True)
    class S:
        x: int = 0

    with pytest.raises(InvalidRequest, match="cannot store"):
        keys.in_state(S(), "refund")


def test_from_state_never_creates():
    with pytest.raises(MissingKey, match="refund_idempotency_key"):
        keys.from_state({}, "refund")
    assert keys.from_state({"refund_idempotency_key": "k"}, "refund") == "k"


def test_a_stored_key_that_is_too_long_is_refused():
    with pytest.raises(InvalidRequest):
        keys.in_state({"r_idempotency_key": "x" * 300}, "r")
