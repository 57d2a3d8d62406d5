"""The Python client routes and canonicalises exactly as the executor: the
vectors are written by the Go code (wire/vectors_test.go, which fails when
the file and the code disagree) and checked here byte for byte."""

import json

import msgpack
import pytest

from conftest import VECTORS
from toolexec import InvalidRequest, args_hash, canonical_bytes, canonicalize, murmur2, owner_partition
from toolexec._http import header_key
from toolexec._validate import key as validate_key

with open(VECTORS) as f:
    V = json.load(f)


def test_the_vector_file_holds_enough_cases():
    assert len(V["partition"]) >= 100
    assert len(V["canonical"]) >= 20
    assert len(V["numbers"]) >= 20 and len(V["keys"]) >= 20
    assert any(c.get("error") for c in V["canonical"])


@pytest.mark.parametrize("v", V["partition"], ids=lambda v: f"{v['key_hex'][:16]}/{v['partitions']}")
def test_owner_partition_matches_go_topics_partition(v):
    key = bytes.fromhex(v["key_hex"])
    assert owner_partition(key, v["partitions"]) == v["partition"]


def test_owner_partition_of_a_str_is_that_of_its_utf8_bytes():
    for v in V["partition"]:
        key = bytes.fromhex(v["key_hex"])
        try:
            s = key.decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert owner_partition(s, v["partitions"]) == v["partition"]


def test_murmur2_kafka_vectors():
    # Kafka's UtilsTest.testMurmur2, as int32.
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    for data, want in cases.items():
        got = murmur2(data)
        assert (got - (1 << 32) if got >= 1 << 31 else got) == want, data


def test_owner_partition_refuses_zero_partitions():
    with pytest.raises(ValueError):
        owner_partition("a/b", 0)


@pytest.mark.parametrize("v", V["canonical"], ids=lambda v: v["name"])
def test_canonical_bytes_match_go_canonical_args(v):
    # The args as a client would hold them after reading them from msgpack
    # (ints, floats, str, bytes, lists, dicts), canonicalised here.
    args = msgpack.unpackb(bytes.fromhex(v["args_msgpack_hex"]), raw=False)
    if v.get("error"):
        with pytest.raises(InvalidRequest):
            canonical_bytes(args)
        return
    assert canonical_bytes(args).hex() == v["canonical_hex"]
    assert args_hash(args).hex() == v["sha256_hex"]


@pytest.mark.parametrize("v", [c for c in V["canonical"] if not c.get("error")], ids=lambda v: v["name"])
def test_our_msgpack_writer_agrees_with_the_msgpack_package(v):
    # What the Kafka transport sends (msgpack.packb of the canonical value)
    # is the canonical bytes themselves.
    args = msgpack.unpackb(bytes.fromhex(v["args_msgpack_hex"]), raw=False)
    assert msgpack.packb(canonicalize(args), use_bin_type=True).hex() == v["canonical_hex"]


def test_120_and_120_0_are_one_number():
    assert canonical_bytes({"amount": 120, "currency": "EUR"}) == canonical_bytes({"currency": "EUR", "amount": 120.0})
    assert canonical_bytes({"amount": 120, "currency": "EUR"}).hex() == "82a6616d6f756e7478a863757272656e6379a3455552"
    assert canonical_bytes({"a": -0.0}) == canonical_bytes({"a": 0})
    assert canonical_bytes({"a": 0.5}) != canonical_bytes({"a": 0})


def test_python_native_values():
    assert canonicalize({"t": (1, 2.0), "b": bytearray(b"x"), "n": None}) == {"b": b"x", "n": None, "t": [1, 2]}
    assert canonical_bytes(None) == canonical_bytes({}) == b"\x80"
    assert canonical_bytes({"x": True}) != canonical_bytes({"x": 1})  # a bool is no number


@pytest.mark.parametrize("bad", [
    {"x": float("nan")}, {"x": float("inf")}, {"x": {1, 2}}, {1: "int key"}, {"x": 1 << 64},
    {"x": -(1 << 63) - 1}, {"x": object()},
])
def test_values_the_executor_refuses_are_refused_here(bad):
    with pytest.raises(InvalidRequest):
        canonical_bytes(bad)


def test_args_must_be_a_mapping():
    with pytest.raises(InvalidRequest, match="mapping"):
        canonical_bytes([1, 2])  # type: ignore[arg-type]


@pytest.mark.parametrize("v", [n for n in V["numbers"] if n.get("args_msgpack_hex")], ids=lambda v: v["json"])
def test_numbers_sent_over_http_canonicalise_as_here(v):
    # Over HTTP the client sends json.dumps of the canonical arguments and
    # the gateway reads each number exactly (wire.ParseNumber): the text
    # this client writes for a value is the vector's, and its canonical
    # bytes are the gateway's for that text, so the journal's hash and the
    # executor's agree.
    args = msgpack.unpackb(bytes.fromhex(v["args_msgpack_hex"]), raw=False)
    assert json.dumps(canonicalize(args)["n"]) == v["json"]
    assert canonical_bytes(args).hex() == v["canonical_hex"]


@pytest.mark.parametrize("v", V["keys"], ids=lambda v: v["key_hex"][:24] or "empty")
def test_key_grammar_and_header_match_the_gateway(v):
    raw = bytes.fromhex(v["key_hex"])
    try:
        k = raw.decode("utf-8")
    except UnicodeDecodeError:
        assert not v["valid"]
        return
    if not v["valid"]:
        with pytest.raises(InvalidRequest):
            validate_key(k)
        return
    assert validate_key(k) == k
    assert header_key(k) == v["header"]
