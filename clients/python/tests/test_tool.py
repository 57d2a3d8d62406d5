"""The @client.tool decorator, with a client whose transport records
calls (no network)."""

import asyncio
from typing import Literal, Optional

import pytest

from toolexec import AsyncClient, Client, InvalidRequest, Journal, MissingKey, Result, keys


class FakeTransport:
    def __init__(self, status="succeeded"):
        self.sent = []
        self.status = status

    def exchange(self, req):
        self.sent.append(req)
        return Result.from_wire({"status": self.status, "key": req.key, "tool": req.tool,
                                 "result": {"args": req.args}, "was_replay": len(self.sent) > 1}), ""

    def close(self):
        pass


class FakeAsyncTransport(FakeTransport):
    async def exchange(self, req):  # type: ignore[override]
        return FakeTransport.exchange(self, req)

    async def connect(self):
        pass

    async def close(self):  # type: ignore[override]
        pass


@pytest.fixture
def fake():
    t = FakeTransport()
    return Client(t), t


def test_a_typed_signature_becomes_a_call(fake):
    client, t = fake

    @client.tool("payments.refund")
    def refund(order_id: str, amount: int, currency: str = "EUR", note: Optional[str] = None) -> Result:
        """Refund an order, in full or in part."""

    r = refund.using(key="rf-1")("o-1", 5)
    assert r.status == "succeeded"
    req = t.sent[0]
    assert (req.tool, req.key) == ("payments.refund", "rf-1")
    assert req.args == {"amount": 5, "currency": "EUR", "note": None, "order_id": "o-1"}
    assert refund.__doc__ == refund.description == "Refund an order, in full or in part."
    assert refund.__name__ == "refund" and refund.name == "payments.refund"
    assert refund.input_schema == {
        "type": "object", "additionalProperties": False, "required": ["order_id", "amount"],
        "properties": {"order_id": {"type": "string"}, "amount": {"type": "integer"},
                       "currency": {"type": "string"}, "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
    }


def test_no_key_is_an_error_not_a_fresh_uuid(fake):
    client, t = fake

    @client.tool("payments.refund")
    def refund(order_id: str) -> Result: ...

    with pytest.raises(MissingKey):
        refund("o-1")
    with pytest.raises(MissingKey, match="refund_idempotency_key"):
        refund.using(state={})("o-1")
    assert t.sent == []


def test_the_key_comes_from_the_state(fake):
    client, t = fake

    @client.tool("payments.refund")
    def refund(order_id: str) -> Result: ...

    state = {}
    k = keys.in_state(state, "refund")
    refund.using(state=state)("o-1")
    refund.using(state={"payout_idempotency_key": "p-1"}, state_name="payout")("o-1")
    assert [r.key for r in t.sent] == [k, "p-1"]


def test_the_key_comes_from_the_running_journal_step_and_the_answer_is_journaled(fake, tmp_path):
    client, t = fake

    @client.tool("payments.refund")
    def refund(order_id: str, amount: int) -> Result: ...

    with Journal(str(tmp_path / "j.sqlite")) as j:
        with j.step("refund-7") as step:
            r = refund(order_id="o-1", amount=5)
            assert t.sent[0].key == step.key and step.completed and not r.journaled
        # The step is completed: called again, it answers from the journal.
        with j.step("refund-7") as step:
            r2 = refund(order_id="o-1", amount=5)
        assert len(t.sent) == 1 and r2.journaled and r2.status == "succeeded"
        assert j.get("refund-7").tool == "payments.refund"
        # client.call with the step's key inside the block is the step's call too
        with j.step("refund-8") as step:
            client.call("payments.refund", key=step.key, args={"order_id": "o-2", "amount": 1})
        assert j.get("refund-8").answer.key == t.sent[-1].key


def test_arguments_are_checked_against_the_signature(fake):
    client, t = fake

    @client.tool("payments.refund")
    def refund(order_id: str, amount: int, mode: Literal["full", "part"] = "full", **extra) -> Result: ...

    call = refund.using(key="k")
    with pytest.raises(InvalidRequest, match="amount"):
        call("o-1", "5")
    with pytest.raises(InvalidRequest, match="amount"):
        call("o-1", True)  # a bool is no integer in JSON
    with pytest.raises(InvalidRequest, match="mode"):
        call("o-1", 5, mode="half")
    with pytest.raises(InvalidRequest, match="missing"):
        call("o-1")
    call("o-1", 5, reason="dup")  # **extra is sent too
    assert t.sent[-1].args == {"amount": 5, "mode": "full", "order_id": "o-1", "reason": "dup"}


def test_var_positional_parameters_are_refused(fake):
    client, _ = fake
    with pytest.raises(InvalidRequest, match=r"\*items"):
        @client.tool("x")
        def bad(*items: int) -> Result: ...


def test_the_async_decorator_returns_awaitables():
    t = FakeAsyncTransport()
    client = AsyncClient(t)

    @client.tool("payments.refund", description="Refund (async).")
    async def refund(order_id: str) -> Result: ...

    async def main():
        return await refund.using(key="k-a")("o-1")

    r = asyncio.run(main())
    assert r.status == "succeeded" and t.sent[0].key == "k-a" and refund.description == "Refund (async)."


def test_a_body_beyond_a_docstring_draws_a_warning_that_it_never_runs(fake):
    import warnings

    client, t = fake
    ran = []
    with pytest.warns(UserWarning, match=r"body of .*refund is never run; the executor calls the tool 'payments.refund'") as w:
        @client.tool("payments.refund")
        def refund(order_id: str, amount: int) -> Result:
            """Refund an order."""
            ran.append(order_id)  # a newcomer's expectation: this runs
            return Result("succeeded")
    assert w[0].filename == __file__  # pointed at the decoration, not at toolexec
    refund.using(key="k1")(order_id="o-1", amount=5)
    assert ran == [] and len(t.sent) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")

        @client.tool("payments.refund")
        def declared(order_id: str) -> Result:
            """Only a docstring."""

        @client.tool("payments.refund")
        def ellipsis(order_id: str) -> Result: ...

        @client.tool("payments.refund")
        def passes(order_id: str) -> Result:
            """A docstring and pass."""
            pass

        client.tool("payments.refund")(lambda order_id: None)  # no source to read: no warning
