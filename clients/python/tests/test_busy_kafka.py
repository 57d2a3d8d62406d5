"""The Kafka transport's handling of refusals for want of a place, against a
stand-in for KafkaCore: the executor answers not_executed (over_share,
queue_full) with retry_after_ms, and the client sends the key again, with a
new intent id, after the hint."""

import asyncio
import threading

import pytest

import toolexec
from toolexec import Result
from toolexec.aio import _AsyncKafkaTransport
from toolexec.client import _KafkaTransport
from toolexec._request import CALL, CallRequest, MAX_BUSY_RETRIES


class FakeCore:
    """Answers the first `refuse` intents busy, the rest succeeded."""

    def __init__(self, refuse, hint_ms=10):
        self.refuse, self.hint_ms = refuse, hint_ms
        self.sent = []
        self.lock = threading.Lock()

    def connect(self):
        pass

    def send(self, req, waiter):
        with self.lock:
            self.sent.append(req)
            busy = len(self.sent) <= self.refuse
        d = {"status": "succeeded", "intent_id": req.intent_id, "tenant": "acme", "key": req.key, "was_replay": False}
        if busy:
            d.update(status="not_executed", error={"code": "over_share", "message": "share"}, retry_after_ms=self.hint_ms)
        threading.Timer(0.001, waiter.on_answer, [Result.from_wire(d)]).start()

    def forget(self, intent_id):
        pass

    def last_error(self):
        return None

    def close(self):
        pass


def req(wait=10.0):
    return CallRequest(type=CALL, tool="payments.refund", key="k1", tenant="acme", args={}, wait=wait,
                       traceparent=None, intent_id="first")


def test_sent_again_with_a_new_id_after_the_hint():
    core = FakeCore(refuse=2)
    last, _ = _KafkaTransport(core).exchange(req())
    assert last.status == "succeeded"
    assert [r.key for r in core.sent] == ["k1"] * 3
    assert len({r.intent_id for r in core.sent}) == 3 and core.sent[0].intent_id == "first"


def test_gives_up_after_the_bounded_retries_or_the_wait():
    core = FakeCore(refuse=1 << 30, hint_ms=1)
    last, _ = _KafkaTransport(core).exchange(req())
    assert last.busy and len(core.sent) == MAX_BUSY_RETRIES + 1
    core = FakeCore(refuse=1 << 30, hint_ms=60_000)
    last, _ = _KafkaTransport(core).exchange(req(wait=5))
    assert last.busy and len(core.sent) == 1
    with pytest.raises(toolexec.Busy):
        toolexec._request.outcome(req(), last)


def test_the_async_transport_follows_the_same_rules():
    core = FakeCore(refuse=2)
    last, _ = asyncio.run(_AsyncKafkaTransport(core).exchange(req()))
    assert last.status == "succeeded" and len({r.intent_id for r in core.sent}) == 3
