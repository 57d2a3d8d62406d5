"""Cross-language conformance of wire contract v1 (docs/wire-format.md).

Every intent is produced with confluent-kafka (librdkafka) and its DEFAULT
partitioner, encoded with the msgpack package, exactly as the document
describes; answers are read read_committed from <prefix>results (or the
reply_to topic) and matched by intent_id.
"""

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import uuid

import msgpack
import pytest

import wire

HERE = os.path.dirname(os.path.abspath(__file__))
DOC = os.path.join(HERE, "..", "..", "docs", "wire-format.md")


def tp_header():
    return f"00-{uuid.uuid4().hex}-{uuid.uuid4().hex[:16]}-01"


def check_answer_envelope(h, rec, intent_id, key, tenant=None):
    """What every answer carries: v, intent_id, tenant, key, Kafka key
    <tenant>/<key> and the murmur2 partition of that key."""
    tenant = tenant or h.tenant
    r = rec.msg
    assert r["v"] == 1
    assert r["intent_id"] == intent_id
    assert r["tenant"] == tenant and r["key"] == key
    assert isinstance(r["was_replay"], bool), "was_replay is always present"
    rk = wire.routing_key(tenant, key)
    assert rec.key == rk.encode()
    n = h.readers["results"].partitions if rec.topic == h.topics["results"] else None
    if n:
        assert rec.partition == wire.owner_partition(rk, n), "answers land on the murmur2 partition of their key"


# --------------------------------------------------------------------- 0

def test_00_murmur2_matches_kafka():
    # Vectors of Kafka's UtilsTest.testMurmur2 (signed int32).
    cases = {b"21": -973932308, b"foobar": -790332482, b"a-little-bit-long-string": -985981536,
             b"a-little-bit-longer-string": -1486304829,
             b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971, b"abc": 479470107}
    for data, want in cases.items():
        got = wire.murmur2(data)
        assert (got - (1 << 32) if got >= 1 << 31 else got) == want, data
    assert wire.downstream_key("acme", "payments.charge", "intent-1") == \
        "tk1_acddfd671a0af7cc8a6b50026f791533873c08c9"  # tools/downstream_key_test.go


# --------------------------------------------------------------------- 1

def test_01_call_succeeds(h):
    key, iid = h.key("charge"), h.new_id()
    args = {"currency": "EUR", "amount": 120}
    h.send(wire.intent(iid, h.tenant, key, "conf.charge", args,
                       scope={"run_id": "run-1", "thread_id": "thread-1"},
                       x_future_field={"ignored": [1, 2, 3]}, deadline_ms=int(time.time() * 1000) + 600_000))
    rec = h.answer(iid)
    r = rec.msg
    check_answer_envelope(h, rec, iid, key)
    assert r["status"] == "succeeded", r
    assert r["type"] == "call" and r["tool"] == "conf.charge"
    assert r["was_replay"] is False
    assert r["original_intent_id"] == iid
    assert r["original_called_at"] > 0 and r["completed_at"] >= r["original_called_at"]
    assert r["attempt"] == 1
    assert "error" not in r and "previous_status" not in r

    reqs = h.tools.calls(h.tenant, key, "conf.charge")
    assert len(reqs) == 1, reqs
    req = reqs[0]
    assert req["path"] == "/charge"
    # A downstream key per call, derived from what the answer says of it.
    assert req["idempotency_key"] == wire.call_downstream_key(h.tenant, "conf.charge", key, r["attempt"], r["original_called_at"])
    assert req["headers"]["content-type"] == "application/json"
    assert req["headers"]["x-tool-tenant"] == h.tenant and req["headers"]["x-tool-key"] == key
    assert "traceparent" not in req["headers"]
    # The canonical args as a JSON object with sorted keys.
    assert req["raw"] == b'{"amount":120,"currency":"EUR"}'
    assert r["result"] == req["response"]  # numerically: see test_17 for integer fidelity
    assert all(x["idempotency_key"] for x in h.tools.all()), "every tool request has an Idempotency-Key"


# --------------------------------------------------------------------- 2

def test_02_duplicate_is_replayed(h):
    key, first, dup = h.key("dup"), h.new_id(), h.new_id()
    args1 = {"amount": 120, "currency": "EUR", "meta": {"order": "o-1", "lines": [1, 2.5]}}
    args2 = {"meta": {"lines": [1.0, 2.5], "order": "o-1"}, "currency": "EUR", "amount": 120.0}
    b1 = wire.pack(wire.intent(first, h.tenant, key, "conf.charge", args1))
    b2 = wire.pack(wire.intent(dup, h.tenant, key, "conf.charge", args2))
    assert wire.pack(args1) != wire.pack(args2), "the two encodings must differ on the wire"
    assert wire.canonical_bytes(args1) == wire.canonical_bytes(args2)

    h.produce_raw(b1, wire.routing_key(h.tenant, key))
    a1 = h.answer(first).msg
    assert a1["status"] == "succeeded" and a1["was_replay"] is False

    h.produce_raw(b2, wire.routing_key(h.tenant, key))
    rec = h.answer(dup)
    a2 = rec.msg
    check_answer_envelope(h, rec, dup, key)
    assert a2["status"] == "succeeded"
    assert a2["was_replay"] is True
    assert a2["original_intent_id"] == first
    assert a2["original_called_at"] == a1["original_called_at"] > 0
    assert a2["completed_at"] == a1["completed_at"]
    assert a2["result"] == a1["result"]
    assert a2["attempt"] == 1

    # A re-delivery of the first emission (same id) is served from the record too.
    h.produce_raw(b1, wire.routing_key(h.tenant, key))
    again = h.readers["results"].wait(lambda r: r.msg and r.msg.get("intent_id") == first, count=2)
    assert again[1].msg["was_replay"] is True and again[1].msg["original_intent_id"] == first

    reqs = h.tools.calls(h.tenant, key, "conf.charge")
    assert len(reqs) == 1, reqs
    assert reqs[0]["raw"] == b'{"amount":120,"currency":"EUR","meta":{"lines":[1,2.5],"order":"o-1"}}'


# --------------------------------------------------------------------- 3

def test_03_same_key_other_args_conflicts(h):
    key, first, other, other_tool = h.key("conflict"), h.new_id(), h.new_id(), h.new_id()
    h.send(wire.intent(first, h.tenant, key, "conf.charge", {"amount": 10}))
    a1 = h.answer(first).msg
    assert a1["status"] == "succeeded"

    h.send(wire.intent(other, h.tenant, key, "conf.charge", {"amount": 11}))
    rec = h.answer(other)
    r = rec.msg
    check_answer_envelope(h, rec, other, key)
    assert r["status"] == "conflict"
    assert r["error"]["code"] == "args_mismatch" and first in r["error"]["message"]
    assert r["was_replay"] is False
    assert r["original_intent_id"] == first and r["original_called_at"] == a1["original_called_at"]
    assert "result" not in r, "a conflict does not disclose the original outcome"

    # Same arguments, another tool: a conflict as well.
    h.send(wire.intent(other_tool, h.tenant, key, "conf.small", {"amount": 10}))
    r = h.answer(other_tool).msg
    assert r["status"] == "conflict" and r["error"]["code"] == "args_mismatch" and r["tool"] == "conf.small"

    # One request for the key in all: the first call's; neither conflict
    # reached the tool.
    assert len(h.tools.calls(h.tenant, key)) == 1


# --------------------------------------------------------------------- 4

def test_04_bad_input_is_rejected_and_dead_lettered(h):
    T = h.tenant
    now_ms = int(time.time() * 1000)
    cases = []  # (name, value, kafka_key, reason, answered_id, stage, headers)

    def add(name, value, kafka_key, reason, answered_id, stage="landing", headers=None):
        cases.append(dict(name=name, value=value, kafka_key=kafka_key, reason=reason,
                          id=answered_id, stage=stage, headers=headers))

    def ok(**over):
        key = over.pop("key", None) or h.key("bad")
        iid = over.pop("id", None) or h.new_id()
        m = wire.intent(iid, T, key, "conf.charge", {"amount": 1})
        for k, v in over.items():
            if v is None:
                m.pop(k, None)
            else:
                m[k] = v
        return m, iid, key

    k = h.key("garbage")
    add("garbage", b"\xc1\xc1 not msgpack " + k.encode(), f"{T}/{k}", "undecodable", None,
        headers=[("traceparent", tp_header()), ("x-agent", "agent-7")])
    m, _, key = ok(id=None)
    m.pop("id")
    add("missing id", wire.pack(m), f"{T}/{key}", "missing_field", None)
    m, iid, key = ok()
    m.pop("key")
    add("missing key", wire.pack(m), f"{T}/{key}", "missing_field", iid)
    m, iid, key = ok(tool="conf.no-such-tool")
    add("unknown tool", wire.pack(m), f"{T}/{key}", "unknown_tool", iid, stage="owner")
    m, iid, key = ok(v=2)
    add("v 2", wire.pack(m), f"{T}/{key}", "unsupported_version", iid)
    m, iid, key = ok(v=None)
    add("v missing", wire.pack(m), f"{T}/{key}", "missing_field", iid)
    m, iid, key = ok(type="resolve", outcome="succeeded", tool=None, args=None)
    add("resolve on intents", wire.pack(m), f"{T}/{key}", "resolve_not_allowed", iid)
    m, iid, key = ok(tenant="other")
    add("tenant differs from the Kafka key", wire.pack(m), f"{T}/{key}", "wrong_tenant", iid)
    m, iid, key = ok()
    add("key differs from the Kafka key", wire.pack(m), f"{T}/{key}-x", "key_mismatch", iid)
    m, iid, key = ok()
    add("no Kafka key", wire.pack(m), None, "missing_field", iid)
    m, iid, key = ok(tenant="ACME")
    add("tenant not [a-z0-9_-]", wire.pack(m), f"ACME/{key}", "invalid_field", iid)
    long_key = h.key("long") + "k" * 260
    m, iid, key = ok(key=long_key)
    add("key over 256 bytes", wire.pack(m), f"{T}/{long_key}", "oversized", iid)
    m, _, key = ok(id="i" * 129)
    add("id over 128 bytes", wire.pack(m), f"{T}/{key}", "invalid_field", None)
    m, iid, key = ok(type=None)
    add("type missing", wire.pack(m), f"{T}/{key}", "missing_field", iid)
    m, iid, key = ok(type="execute")
    add("type unknown", wire.pack(m), f"{T}/{key}", "invalid_field", iid)
    m, iid, key = ok(tool=None)
    add("call without tool", wire.pack(m), f"{T}/{key}", "missing_field", iid)
    m, iid, key = ok(args=[1, 2])
    add("args not a map", wire.pack(m), f"{T}/{key}", "invalid_field", iid)
    m, iid, key = ok(args={"amount": float("nan")})
    add("args with NaN", wire.pack(m), f"{T}/{key}", "invalid_args", iid)
    m, iid, key = ok(reply_to=h.topics["events"])
    add("reply_to an internal topic", wire.pack(m), f"{T}/{key}", "bad_reply_to", iid)
    m, iid, key = ok(deadline_ms=now_ms - 60_000)
    add("deadline passed", wire.pack(m), f"{T}/{key}", "deadline_exceeded", iid, stage="owner")
    m, iid, key = ok(tool="conf.small", args={"blob": "x" * 100})
    add("args over max_args_bytes", wire.pack(m), f"{T}/{key}", "oversized", iid, stage="owner")

    for c in cases:
        c["partition"], c["offset"] = h.produce_raw(c["value"], c["kafka_key"], c["headers"])

    # After all of them, a valid intent is still served.
    good_key, good = h.key("after-bad"), h.new_id()
    h.send(wire.intent(good, T, good_key, "conf.charge", {"amount": 5}))
    assert h.answer(good).msg["status"] == "succeeded"

    dl_parts = h.readers["deadletter"].partitions
    problems = []
    for c in cases:
        try:
            rec = h.dead_letter(c["value"])
            d = rec.msg
            assert set(d) >= {"v", "reason", "detail", "topic", "partition", "offset", "value", "at"}, d
            assert d["v"] == 1 and d["reason"] == c["reason"], (d["reason"], d["detail"])
            assert d["reason"] in wire.REASONS
            assert d["detail"] and d["at"] > 0
            assert d["topic"] == h.topics["intents"]
            kk = c["kafka_key"].encode() if c["kafka_key"] is not None else None
            assert rec.key == kk
            assert rec.partition == wire.owner_partition(c["kafka_key"] or "", dl_parts)
            if c["stage"] == "landing":
                assert (d["partition"], d["offset"]) == (c["partition"], c["offset"])
            else:  # decided at the owner, after a forward when it landed elsewhere
                assert d["partition"] == wire.owner_partition(c["kafka_key"], h.partitions)
                if c["partition"] == d["partition"]:
                    assert d["offset"] == c["offset"]
            if c["headers"]:
                assert d["headers"] == {k: v for k, v in c["headers"]}
            if c["id"]:
                assert d["intent_id"] == c["id"]
                ans = h.answer(c["id"])
                a = ans.msg
                assert a["status"] == "rejected" and a["was_replay"] is False
                assert a["error"] == {"code": c["reason"], "message": d["detail"]}
                assert ans.topic == h.topics["results"]
        except AssertionError as e:
            problems.append(f"{c['name']}: {e}")
    assert not problems, "\n".join(problems)

    # Cases without a readable id get no answer: nothing on results bears their Kafka key.
    h.sync_results()
    for c in cases:
        if c["id"] is None:
            kk = c["kafka_key"].encode()
            assert h.readers["results"].matching(lambda r: r.key == kk) == [], c["name"]


# --------------------------------------------------------------------- 5

def test_05_reply_to(h):
    topic = h.prefix + "replies"
    h.create_topic(topic, 3)
    replies = h.add_reader("replies", topic)
    key, iid = h.key("reply"), h.new_id()
    h.send(wire.intent(iid, h.tenant, key, "conf.charge", {"amount": 7}, reply_to=topic))
    rec = h.answer(iid, reader="replies")
    assert rec.msg["status"] == "succeeded" and rec.topic == topic
    rk = wire.routing_key(h.tenant, key)
    assert rec.key == rk.encode() and rec.partition == wire.owner_partition(rk, replies.partitions)
    h.sync_results()
    assert h.answers(iid) == [], "an answer with reply_to is not also written to results"

    key2, bad = h.key("reply-missing"), h.new_id()
    missing = h.prefix + "no-such-topic"
    v = wire.pack(wire.intent(bad, h.tenant, key2, "conf.charge", {"amount": 7}, reply_to=missing))
    h.produce_raw(v, wire.routing_key(h.tenant, key2))
    # A reply_to that does not exist is no reason to refuse the intent: it
    # is decided, and its answer goes to results with the reason.
    r = h.answer(bad).msg
    assert r["status"] == "succeeded" and missing in r["reply_to_error"], r
    assert len(h.tools.calls(h.tenant, key2, "conf.charge")) == 1


# --------------------------------------------------------------------- 6

def test_06_traceparent_is_carried(h):
    tp = tp_header()
    key, iid = h.key("trace"), h.new_id()
    h.send(wire.intent(iid, h.tenant, key, "conf.charge", {"amount": 3}), headers=[("traceparent", tp)])
    rec = h.answer(iid)
    assert rec.msg["status"] == "succeeded"
    assert rec.header("traceparent") == tp, rec.headers
    reqs = h.tools.calls(h.tenant, key, "conf.charge")
    assert len(reqs) == 1 and reqs[0]["headers"].get("traceparent") == tp

    # A duplicate with its own traceparent gets its own on its answer.
    tp2, dup = tp_header(), h.new_id()
    h.send(wire.intent(dup, h.tenant, key, "conf.charge", {"amount": 3}), headers=[("traceparent", tp2)])
    assert h.answer(dup).header("traceparent") == tp2

    # Rejections carry it as well.
    tp3, rej = tp_header(), h.new_id()
    h.send(wire.intent(rej, h.tenant, h.key("trace-rej"), "conf.nope", {}), headers=[("traceparent", tp3)])
    ans = h.answer(rej)
    assert ans.msg["status"] == "rejected" and ans.header("traceparent") == tp3


# --------------------------------------------------------------------- 7

def test_07_tool_4xx_is_failed_and_replayed(h):
    key, first, dup = h.key("reject"), h.new_id(), h.new_id()
    h.send(wire.intent(first, h.tenant, key, "conf.reject", {"card": "4000-0000"}))
    rec = h.answer(first)
    r = rec.msg
    check_answer_envelope(h, rec, first, key)
    assert r["status"] == "failed" and r["was_replay"] is False
    reqs = h.tools.calls(h.tenant, key, "conf.reject")
    assert len(reqs) == 1
    assert r["error"]["code"] == "http_400"
    assert json.loads(r["error"]["message"]) == reqs[0]["response"]
    assert "result" not in r and r["completed_at"] > 0

    h.send(wire.intent(dup, h.tenant, key, "conf.reject", {"card": "4000-0000"}))
    d = h.answer(dup).msg
    assert d["status"] == "failed" and d["was_replay"] is True and d["original_intent_id"] == first
    assert d["error"] == r["error"]
    assert len(h.tools.calls(h.tenant, key, "conf.reject")) == 1


# --------------------------------------------------------------------- 8

def test_08_default_partitioner_is_forwarded(h):
    n = h.partitions
    sent = []
    for i in range(24):
        key, iid = h.key(f"part{i}"), h.new_id()
        if i % 8 == 0:  # idempotency keys may hold '/' and any UTF-8
            key = f"orders/{key}/\u00e9t\u00e9-\u2603"
        value = wire.pack(wire.intent(iid, h.tenant, key, "conf.charge", {"amount": i}))
        p, off = h.produce_raw(value, wire.routing_key(h.tenant, key))
        sent.append(dict(key=key, id=iid, value=value, p=p, off=off,
                         owner=wire.owner_partition(wire.routing_key(h.tenant, key), n)))
    misplaced = [s for s in sent if s["p"] != s["owner"]]
    print(f"\nlibrdkafka put {len(misplaced)} of {len(sent)} intents on a partition other than the murmur2 owner")
    assert misplaced, "librdkafka's default partitioner should disagree with murmur2 for some keys"

    for s in sent:
        rec = h.answer(s["id"])
        assert rec.msg["status"] == "succeeded" and rec.msg["was_replay"] is False
    h.sync_results()
    for s in sent:
        assert len(h.answers(s["id"])) == 1, f"{s['id']}: exactly one answer"
        assert len(h.tools.calls(h.tenant, s["key"], "conf.charge")) == 1

    odd = [s for s in sent if "/" in s["key"]]
    for s in odd:
        req = h.tools.calls(h.tenant, s["key"], "conf.charge")[0]
        assert urllib.parse.unquote_plus(req["headers"]["x-tool-key"]) == s["key"]
        assert h.answer(s["id"]).msg["key"] == s["key"]

    intents = h.readers["intents"]
    for s in misplaced:
        src = f"{h.topics['intents']}/{s['p']}/{s['off']}"
        fw = intents.wait(lambda r: r.header("x-forwarded-from") == src, what=f"forward of {src}")
        assert len(fw) == 1
        assert fw[0].partition == s["owner"] and fw[0].value == s["value"]
        assert fw[0].key == wire.routing_key(h.tenant, s["key"]).encode()


# --------------------------------------------------------------------- 9

def test_09_read_only_is_not_deduplicated(h):
    key, a, b = h.key("lookup"), h.new_id(), h.new_id()
    h.send(wire.intent(a, h.tenant, key, "conf.lookup", {"q": "x"}))
    ra = h.answer(a).msg
    h.send(wire.intent(b, h.tenant, key, "conf.lookup", {"q": "y"}))
    rb = h.answer(b).msg
    for r, iid in ((ra, a), (rb, b)):
        assert r["status"] == "succeeded" and r["was_replay"] is False
        assert r["original_intent_id"] == iid and r["attempt"] == 1 and r["completed_at"] > 0
        assert "original_called_at" not in r
    assert ra["result"]["q"] == "x" and rb["result"]["q"] == "y"
    assert len(h.tools.calls(h.tenant, key, "conf.lookup")) == 2


# -------------------------------------------------------------------- 10

def test_10_events(h):
    key, first, dup, other = h.key("events"), h.new_id(), h.new_id(), h.new_id()
    tp = tp_header()
    args = {"b": 2.0, "a": [1, {"z": 1, "y": 0.5}]}
    h.send(wire.intent(first, h.tenant, key, "conf.charge", args, scope={"run_id": "r-9", "thread_id": "t-9"}),
           headers=[("traceparent", tp)])
    res = h.answer(first).msg
    h.send(wire.intent(dup, h.tenant, key, "conf.charge", {"a": [1.0, {"y": 0.5, "z": 1}], "b": 2}))
    h.answer(dup)
    h.send(wire.intent(other, h.tenant, key, "conf.charge", {"b": 3}))
    h.answer(other)

    rk = wire.routing_key(h.tenant, key)
    evs = h.readers["events"].wait(lambda r: r.key == rk.encode(), count=4, what="events")
    assert len(evs) == 4, evs
    owner = wire.owner_partition(rk, h.partitions)
    assert all(e.partition == owner for e in evs)
    evs.sort(key=lambda e: e.offset)
    kinds = [e.msg["kind"] for e in evs]
    assert kinds == [wire.EV_STARTED, wire.EV_OUTCOME, wire.EV_REPLAYED, wire.EV_CONFLICTED], kinds
    for e in evs:
        assert e.msg["v"] == 1 and e.msg["tenant"] == h.tenant and e.msg["key"] == key and e.msg["at"] > 0
    started, outcome, replayed, conflicted = (e.msg for e in evs)
    assert evs[0].header("traceparent") == tp and evs[1].header("traceparent") == tp

    assert started["intent_id"] == first and started["tool"] == "conf.charge"
    assert started["args"] == wire.canonical_bytes(args) == b"\x82\xa1a\x92\x01\x82\xa1y\xcb?\xe0\x00\x00\x00\x00\x00\x00\xa1z\x01\xa1b\x02"
    assert started["args_hash"] == hashlib.sha256(started["args"]).digest() == wire.args_hash(args)
    assert started["pending_ttl_ms"] == 120_000 and started["retention_ms"] == 86_400_000
    assert started["attempt"] == 1 and started["run_id"] == "r-9" and started["thread_id"] == "t-9"
    assert started["waiter"]["id"] == first and started["waiter"]["type"] == "call"
    assert started["waiter"]["tp"] == tp and started["waiter"]["at"] > 0
    assert started["at"] == res["original_called_at"]

    assert outcome["intent_id"] == first and outcome["call_id"] == first
    assert outcome["status"] == wire.ST_SUCCEEDED
    assert msgpack.unpackb(outcome["result"]) == res["result"]
    assert outcome["at"] == res["completed_at"]

    assert replayed["intent_id"] == dup
    assert conflicted["intent_id"] == other and conflicted["tool"] == "conf.charge"
    assert conflicted["args_hash"] == wire.args_hash({"b": 3})


# -------------------------------------------------------------------- 11

def test_11_pending_then_resolve_on_control(h):
    key, first, dup, cmd = h.key("flaky"), h.new_id(), h.new_id(), h.new_id()
    h.send(wire.intent(first, h.tenant, key, "conf.flaky", {"n": 1}))
    pend = h.readers["results"].wait(lambda r: r.msg and r.msg.get("intent_id") == first)[0].msg
    assert pend["status"] == "pending" and pend["error"]["code"] == "in_doubt" and pend["was_replay"] is False
    assert len(h.tools.calls(h.tenant, key, "conf.flaky")) == 1

    h.send(wire.intent(dup, h.tenant, key, "conf.flaky", {"n": 1}))
    p2 = h.readers["results"].wait(lambda r: r.msg and r.msg.get("intent_id") == dup)[0].msg
    assert p2["status"] == "pending" and p2["was_replay"] is True and p2["original_intent_id"] == first

    # Within the tool's pending_ttl the call may still reach the tool: an
    # operator's resolve is refused unless forced.
    early = h.new_id()
    h.send({"v": 1, "type": "resolve", "id": early, "tenant": h.tenant, "key": key, "outcome": "succeeded",
            "by": "operator:ann"}, topic=h.topics["control"])
    refused = h.answer(early).msg
    assert refused["status"] == "rejected" and refused["error"]["code"] == "invalid_command", refused
    assert refused["error"].get("refusal") == "may_still_land", refused
    assert "force" in refused["error"]["message"], refused

    resolve = {"v": 1, "type": "resolve", "id": cmd, "tenant": h.tenant, "key": key, "force": True,
               "outcome": "succeeded", "result": {"settled": "by hand"}, "by": "operator:ann", "reason": "checked the ledger"}
    h.send(resolve, topic=h.topics["control"])
    ack = h.answer(cmd).msg
    assert ack["status"] == "resolved" and ack["type"] == "resolve" and ack["original_intent_id"] == first

    fin = h.answer(first).msg
    assert fin["status"] == "succeeded" and fin["result"] == {"settled": "by hand"} and fin["was_replay"] is False
    fin2 = h.answer(dup).msg
    assert fin2["status"] == "succeeded" and fin2["was_replay"] is True and fin2["original_intent_id"] == first
    assert len(h.tools.calls(h.tenant, key, "conf.flaky")) == 1


# -------------------------------------------------------------------- 12

def test_12_compensate(h):
    key, call, comp = h.key("book"), h.new_id(), h.new_id()
    h.send(wire.intent(call, h.tenant, key, "conf.book", {"seat": "12A"}))
    r = h.answer(call).msg
    assert r["status"] == "succeeded"
    h.send({"v": 1, "type": "compensate", "id": comp, "tenant": h.tenant, "key": key})
    c = h.answer(comp).msg
    assert c["status"] == "compensated" and c["type"] == "compensate" and c["was_replay"] is False
    assert c["original_intent_id"] == call and c["tool"] == "conf.book"
    assert c["result"] == r["result"], "a compensated answer carries the original call's result"
    assert c["completed_at"] >= r["completed_at"] and "error" not in c
    undo = h.tools.calls(h.tenant, key, "conf.unbook")
    assert len(undo) == 1 and undo[0]["body"] == {"seat": "12A"}
    assert len(h.tools.calls(h.tenant, key, "conf.book")) == 1


# -------------------------------------------------------------------- docs

def doc_block(name):
    """The fenced code block that follows <!-- conformance:NAME --> in
    docs/wire-format.md."""
    text = open(DOC).read()
    m = re.search(r"<!-- conformance:" + re.escape(name) + r" -->\s*```[a-z]*\n(.*?)\n```", text, re.S)
    assert m, f"docs/wire-format.md has no block marked conformance:{name}"
    return m.group(1)


def test_13_doc_python_snippet(h, monkeypatch):
    monkeypatch.setenv("KAFKA_BROKERS", h.brokers)
    monkeypatch.setenv("TOOL_TOPIC_PREFIX", h.prefix)
    ns = {"__name__": "wire_format_example"}
    exec(compile(doc_block("python"), "docs/wire-format.md#python", "exec"), ns)
    answer, intent = ns["answer"], ns["intent"]
    assert answer["status"] == "succeeded", answer
    assert answer["intent_id"] == intent["id"]
    reqs = h.tools.calls(intent["tenant"], intent["key"], intent["tool"])
    assert len(reqs) == 1 and reqs[0]["body"] == intent["args"]
    assert reqs[0]["headers"]["traceparent"].startswith("00-")


def test_14_doc_kcat_snippet(h, tmp_path):
    if shutil.which("kcat") is None:
        pytest.skip("kcat is not installed")
    env = dict(os.environ, KAFKA_BROKERS=h.brokers, TOOL_TOPIC_PREFIX=h.prefix,
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    produce, read, many = doc_block("kcat-produce"), doc_block("kcat-read"), doc_block("kcat-produce-many")
    script = f"""set -euo pipefail
{produce}
found=""
for i in $(seq 1 60); do
  if out=$( {read} ); then printf '%s\\n' "$out"; found=1; break; fi
  sleep 0.5
done
[[ -n "$found" ]] || {{ echo "no answer for $ID" >&2; exit 1; }}
{many}
"""
    p = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"stdout:\n{p.stdout}\nstderr:\n{p.stderr}"
    answers = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    assert answers, p.stdout
    a = answers[-1]
    assert a["status"] == "succeeded" and a["tenant"] == "acme", a
    reqs = h.tools.calls("acme", a["key"], a["tool"])
    assert len(reqs) == 1 and reqs[0]["headers"]["traceparent"].startswith("00-0af7651916cd43dd")

    # The -K/-D batch: one answer and one tool request per key.
    for key in ("invoice-2024-0043", "invoice-2024-0044"):
        rec = h.readers["results"].wait(lambda r: r.key == f"acme/{key}".encode())[0]
        assert rec.msg["status"] == "succeeded" and rec.msg["was_replay"] is False, rec.msg
        assert len(h.tools.calls("acme", key, "payments.charge")) == 1
        dls = h.readers["deadletter"].matching(lambda r: r.key == f"acme/{key}".encode())
        assert dls == [], dls


# -------------------------------------------------------------------- 15

def test_15_default_tenant(h):
    key, iid = h.key("no-tenant"), h.new_id()
    m = wire.intent(iid, h.tenant, key, "conf.charge", {"amount": 1})
    del m["tenant"]
    h.send(m, kafka_key=f"default/{key}")
    rec = h.answer(iid)
    check_answer_envelope(h, rec, iid, key, tenant="default")
    assert rec.msg["status"] == "succeeded"
    assert len(h.tools.calls("default", key, "conf.charge")) == 1


# -------------------------------------------------------------------- 16

def test_16_read_only_5xx_gets_a_terminal_answer(h):
    key, iid = h.key("ro-5xx"), h.new_id()
    h.send(wire.intent(iid, h.tenant, key, "conf.lookup-flaky", {"q": 1}))
    first = h.readers["results"].wait(lambda r: r.msg and r.msg.get("intent_id") == iid)[0].msg
    if not wire.is_terminal(first["status"]):
        h.answer(iid, timeout=3)


# -------------------------------------------------------------------- 17

def test_17_tool_result_integers_are_kept(h):
    key, iid = h.key("bigint"), h.new_id()
    h.send(wire.intent(iid, h.tenant, key, "conf.bigint", {}))
    r = h.answer(iid).msg
    assert r["status"] == "succeeded"
    assert r["result"]["id"] == 9007199254740993
    assert type(r["result"]["count"]) is int
