"""The HTTP transport against httpx.MockTransport: every row of the
gateway's table (docs/gateway.md) and the client's retry and polling rules. The
same behaviours run against the real gateway in test_e2e_calls.py."""

import asyncio
import json
import time

import httpx
import pytest

import toolexec
from toolexec import (AsyncClient, Client, Conflict, InDoubt, InvalidRequest, NoAnswer, Rejected,
                      TransportError, Unauthorized, UnknownTool)

BASE = "http://gw.test"


def answer(status="succeeded", **kw):
    d = {"v": 1, "intent_id": "i1", "tenant": "acme", "key": "k1", "tool": "payments.refund",
         "status": status, "was_replay": False, "original_intent_id": "i1",
         "original_called_at": 1733000000000}
    d.update(kw)
    return d


def problem(status, title, **kw):
    return httpx.Response(status, headers={"Content-Type": "application/problem+json"},
                          json={"type": "about:blank", "title": title, "status": status, **kw})


class Recorder:
    def __init__(self, handler):
        self.handler = handler
        self.requests = []

    def __call__(self, request):
        self.requests.append(request)
        return self.handler(request, len(self.requests))


def client(handler):
    rec = Recorder(handler)
    return Client.http(BASE, "tok", http_client=httpx.Client(transport=httpx.MockTransport(rec))), rec


def test_a_call_is_a_post_with_the_key_the_token_and_the_wait():
    c, rec = client(lambda req, n: httpx.Response(200, json=answer(result={"refund_id": "rf_1"}),
                                                  headers={"Idempotent-Replayed": "false"}))
    r = c.call("payments.refund", key="k1", args={"amount": 120.0, "order": "o-1"}, wait=7,
               traceparent="00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
    assert r.status == "succeeded" and r.result == {"refund_id": "rf_1"} and not r.was_replay
    req = rec.requests[0]
    assert req.method == "POST" and str(req.url) == f"{BASE}/v1/tools/payments.refund/calls"
    assert req.headers["Authorization"] == "Bearer tok"
    assert req.headers["Idempotency-Key"] == '"k1"'
    assert req.headers["Prefer"] == "wait=7"
    assert req.headers["traceparent"].startswith("00-4bf9")
    assert json.loads(req.content) == {"amount": 120, "order": "o-1"}  # canonical: 120.0 is 120


def test_the_replay_header_marks_a_replay_when_the_body_does_not():
    body = answer()
    del body["was_replay"]
    c, _ = client(lambda req, n: httpx.Response(200, json=body, headers={"Idempotent-Replayed": "true"}))
    assert c.call("payments.refund", key="k1", args={}).was_replay


def test_the_wait_asked_of_the_gateway_is_capped_at_60s():
    c, rec = client(lambda req, n: httpx.Response(200, json=answer()))
    c.call("payments.refund", key="k1", args={}, wait=300)
    assert rec.requests[0].headers["Prefer"] == "wait=60"


@pytest.mark.parametrize("status,body,exc,code", [
    (422, {"code": "args_mismatch", "detail": "other arguments"}, Conflict, "args_mismatch"),
    (400, {"code": "invalid_args", "detail": "/amount: must be integer"}, Rejected, "invalid_args"),
    (400, {"detail": "missing Idempotency-Key"}, Rejected, "bad_request"),
    (404, {"code": "unknown_tool", "detail": "no tool payments.nope"}, UnknownTool, "unknown_tool"),
    (404, {"detail": "no tool payments.nope"}, UnknownTool, "unknown_tool"),
    (400, {"code": "oversized", "detail": "args too large", "intent_id": "i9"}, Rejected, "oversized"),
    (413, {"code": "payload_too_large"}, Rejected, "payload_too_large"),
])
def test_problem_details_become_the_exceptions_that_carry_the_answer(status, body, exc, code):
    c, _ = client(lambda req, n: problem(status, "x", **body))
    with pytest.raises(exc) as ei:
        c.call("payments.refund", key="k1", args={"amount": 1})
    assert ei.value.result.status == ("conflict" if status == 422 else "rejected")
    assert ei.value.code == code
    assert ei.value.result.key == "k1"


def test_an_embedded_answer_in_a_problem_is_used_as_it_is():
    c, _ = client(lambda req, n: httpx.Response(422, json=answer("conflict", error={"code": "args_mismatch", "message": "m"})))
    with pytest.raises(Conflict) as ei:
        c.call("payments.refund", key="k1", args={})
    assert ei.value.result.intent_id == "i1" and ei.value.result.error.message == "m"


def test_401_is_unauthorized():
    c, _ = client(lambda req, n: problem(401, "unauthorized"))
    with pytest.raises(Unauthorized):
        c.call("payments.refund", key="k1", args={})


LOC = {"Location": "/v1/tools/payments.refund/calls/k1", "Retry-After": "0"}


def test_after_a_202_the_same_post_is_sent_again_until_the_answer():
    def h(req, n):
        if n == 1:  # this call's first request started the call (intent i1)
            return httpx.Response(202, json=answer("running", intent_id="i1"), headers=LOC)
        if n == 2:
            return httpx.Response(202, json=answer("pending", intent_id="i2", error={"code": "in_doubt"}), headers=LOC)
        return httpx.Response(200, json=answer(intent_id="i3", was_replay=True, original_intent_id="i1"))
    c, rec = client(h)
    r = c.call("payments.refund", key="k1", args={"a": 1}, wait=30)
    # the answer to the third request replays the call the first one
    # started: for this call(), nothing was replayed
    assert r.status == "succeeded" and not r.was_replay and r.raw["was_replay"] is True
    assert [q.method for q in rec.requests] == ["POST"] * 3
    assert {q.headers["Idempotency-Key"] for q in rec.requests} == {'"k1"'}
    assert {q.content for q in rec.requests} == {b'{"a":1}'}
    # the wait asked of the gateway shrinks with the time left
    waits = [int(q.headers["Prefer"].split("=")[1]) for q in rec.requests]
    assert waits[0] == 30 and all(29 <= w <= 30 for w in waits[1:])


def test_after_a_202_an_answer_from_another_callers_call_stays_a_replay():
    def h(req, n):
        if n == 1:  # i1 joined a call that i0 (another caller) started
            return httpx.Response(202, json=answer("running", intent_id="i1"), headers=LOC)
        return httpx.Response(200, json=answer(intent_id="i2", was_replay=True, original_intent_id="i0"))
    c, _ = client(h)
    assert c.call("payments.refund", key="k1", args={}, wait=30).was_replay


def test_a_202_until_the_wait_ends_is_in_doubt_with_the_pending_answer():
    c, rec = client(lambda req, n: httpx.Response(202, json=answer("pending", error={"code": "in_doubt", "message": "parked"}),
                                                  headers={**LOC, "Retry-After": "1"}))
    t0 = time.monotonic()
    with pytest.raises(InDoubt) as ei:
        c.call("payments.refund", key="k1", args={}, wait=0.5)
    assert time.monotonic() - t0 < 3
    assert type(ei.value) is InDoubt and ei.value.result.status == "pending" and ei.value.code == "in_doubt"
    assert "same key and arguments is safe" in str(ei.value)


AWAITING = answer("pending", error={"code": "awaiting_approval", "message": "the call waits for a person's approval (asked: ops)"},
                  approval_until=1733000600000)


def test_a_call_that_awaits_approval_raises_at_once_and_the_journal_keeps_its_key(tmp_path):
    c, rec = client(lambda req, n: httpx.Response(202, json=AWAITING, headers={**LOC, "Retry-After": "30"}))
    journal = toolexec.Journal(str(tmp_path / "j.sqlite"))
    t0 = time.monotonic()
    with pytest.raises(toolexec.ApprovalPending) as ei:
        with journal.step("transfer") as step:
            c.call("payments.transfer", args={"amount": 5}, wait=30)
    assert time.monotonic() - t0 < 5, "a key awaiting approval must not wait out the call's wait"
    assert len(rec.requests) == 1
    assert isinstance(ei.value, InDoubt) and ei.value.code == toolexec.AWAITING_APPROVAL
    assert ei.value.result.awaiting_approval and not ei.value.result.terminal
    assert ei.value.approval_until is not None and ei.value.approval_until.year == 2024
    assert "waits for a person's approval" in str(ei.value) and "Keep the key" in str(ei.value)
    # The step was not completed: the next run of the step sends the same key.
    with journal.step("transfer") as again:
        assert again.key == step.key and not again.completed


def test_a_denied_call_is_failed_for_good():
    c, _ = client(lambda req, n: httpx.Response(200, json=answer("failed", error={"code": "approval_denied", "message": "bob denied the call: no"})))
    r = c.call("payments.transfer", key="k1", args={})
    assert r.status == "failed" and r.error.code == toolexec.APPROVAL_DENIED and not r.awaiting_approval


def test_running_when_the_wait_ends_is_no_answer():
    c, _ = client(lambda req, n: httpx.Response(202, json=answer("running"), headers=LOC))
    with pytest.raises(NoAnswer) as ei:
        c.call("payments.refund", key="k1", args={}, wait=0.3)
    assert ei.value.result.status == "running" and isinstance(ei.value, InDoubt)
    c, _ = client(lambda req, n: httpx.Response(202, headers=LOC))
    with pytest.raises(NoAnswer) as ei:
        c.call("payments.refund", key="k1", args={}, wait=0)
    assert ei.value.result is None


def test_a_503_and_a_reset_are_retried_with_the_same_key():
    def h(req, n):
        if n == 1:
            return problem(503, "unavailable")
        if n == 2:
            raise httpx.ReadError("connection reset", request=req)
        return httpx.Response(200, json=answer(was_replay=True))
    c, rec = client(h)
    assert c.call("payments.refund", key="k1", args={"a": 1}, wait=10).was_replay
    assert [q.headers["Idempotency-Key"] for q in rec.requests] == ['"k1"'] * 3
    assert all(q.method == "POST" for q in rec.requests)


def test_retries_are_bounded(monkeypatch):
    monkeypatch.setattr(toolexec._http, "BACKOFF_S", 0.01)

    def h(req, n):
        raise httpx.ConnectError("refused", request=req)
    c, rec = client(h)
    with pytest.raises(TransportError) as ei:
        c.call("payments.refund", key="k1", args={}, wait=30)
    assert len(rec.requests) == 5 and ei.value.sent is False


def test_what_cannot_be_sent_over_http_is_refused_before_sending():
    c, rec = client(lambda req, n: httpx.Response(200, json=answer()))
    with pytest.raises(InvalidRequest, match="tenant comes from the token"):
        c.call("payments.refund", key="k1", args={}, tenant="acme")
    for bad in ["a\x00b", "a\u202eb", "trailing ", ".."]:  # the wire's key grammar, as the gateway's
        with pytest.raises(InvalidRequest, match="idempotency key"):
            c.call("payments.refund", key=bad, args={})
    with pytest.raises(InvalidRequest, match="JSON"):
        c.call("payments.refund", key="k1", args={"b": b"\x00"})
    with pytest.raises(InvalidRequest):
        c.call("payments.refund", key="x" * 257, args={})
    with pytest.raises(InvalidRequest):
        c.call("payments.refund", key="k1", args={"x": float("nan")})
    with pytest.raises(toolexec.MissingKey):
        c.call("payments.refund", args={})
    assert rec.requests == []


def test_a_key_that_is_not_ascii_goes_as_a_display_string():
    c, rec = client(lambda req, n: httpx.Response(200, json=answer()))
    c.call("payments.refund", key="ключ-é", args={})
    assert rec.requests[0].headers["Idempotency-Key"] == '%"%d0%ba%d0%bb%d1%8e%d1%87-%c3%a9"'


def test_keys_with_quotes_and_slashes_are_escaped():
    c, rec = client(lambda req, n: httpx.Response(200, json=answer()))
    c.call("payments.refund", key='a/"b"\\c', args={})
    assert rec.requests[0].headers["Idempotency-Key"] == '"a/\\"b\\"\\\\c"'
    c.get("payments.refund", 'a/"b"')
    assert rec.requests[1].url.raw_path == b"/v1/tools/payments.refund/calls/a%2F%22b%22"


def test_compensate_get_and_list_tools():
    def h(req, n):
        path = req.url.path
        if path.endswith("/k2/compensate"):
            return problem(409, "refused", code="not_compensatable", detail="the call failed")
        if path.endswith("/compensate"):
            return httpx.Response(200, json=answer("compensated"))
        if path == "/v1/tools":
            return httpx.Response(200, json={"tools": [{"name": "payments.refund", "class": "native_key",
                                                        "description": "Refund", "input_schema": {"type": "object"}}]})
        if path.endswith("/unknown"):
            return problem(404, "unknown key")
        return httpx.Response(200, json=answer())
    c, rec = client(h)
    assert c.compensate("payments.refund", key="k1").status == "compensated"
    assert rec.requests[0].method == "POST" and rec.requests[0].url.path == "/v1/tools/payments.refund/calls/k1/compensate"
    assert c.get("payments.refund", "k1").status == "succeeded"
    assert c.get("payments.refund", "unknown") is None
    with pytest.raises(Rejected) as ei:
        c.compensate("payments.refund", key="k2")
    assert ei.value.code == "not_compensatable"
    tools = c.list_tools()
    assert tools[0].name == "payments.refund" and tools[0].tool_class == "native_key"


def test_the_async_client_follows_the_same_rules():
    def h(req, n):
        if n == 1:
            return httpx.Response(202, json=answer("running"), headers=LOC)
        return httpx.Response(200, json=answer(was_replay=True))

    async def main():
        rec = Recorder(h)
        c = AsyncClient.http(BASE, "tok", http_client=httpx.AsyncClient(transport=httpx.MockTransport(rec)))
        r = await c.call("payments.refund", key="k1", args={"a": 1.0})
        c2 = AsyncClient.http(BASE, "tok", http_client=httpx.AsyncClient(
            transport=httpx.MockTransport(lambda req: problem(422, "conflict", code="args_mismatch"))))
        with pytest.raises(Conflict):
            await c2.call("payments.refund", key="k1", args={})
        await c.aclose()
        await c2.aclose()
        return r, rec

    r, rec = asyncio.run(main())
    assert not r.was_replay and [q.method for q in rec.requests] == ["POST", "POST"]
    assert json.loads(rec.requests[0].content) == {"a": 1}

    async def awaiting():
        c = AsyncClient.http(BASE, "tok", http_client=httpx.AsyncClient(
            transport=httpx.MockTransport(lambda req: httpx.Response(202, json=AWAITING, headers=LOC))))
        try:
            with pytest.raises(toolexec.ApprovalPending):
                await c.call("payments.transfer", key="k1", args={}, wait=30)
        finally:
            await c.aclose()

    t0 = time.monotonic()
    asyncio.run(awaiting())
    assert time.monotonic() - t0 < 5


def test_bad_construction_is_a_config_error():
    with pytest.raises(toolexec.ConfigError):
        Client.http("gw:8080", "tok")
    with pytest.raises(toolexec.ConfigError):
        Client.http(BASE, "")


def test_schema_errors_are_named_in_the_message():
    c, _ = client(lambda req, n: problem(400, "bad args", code="invalid_args", detail="2 arguments do not match",
                                         errors=[{"path": "/amount", "message": "minimum: got 0, want 1"}]))
    with pytest.raises(Rejected, match="/amount: minimum") as ei:
        c.call("payments.refund", key="k1", args={"amount": 0})
    assert ei.value.code == "invalid_args"


def test_a_call_in_an_opentelemetry_span_continues_its_trace():
    """With the [otel] extra, a call inside a span sends that span's
    traceparent and tracestate; an explicit traceparent= wins; outside any
    span nothing is sent."""
    trace = pytest.importorskip("opentelemetry.trace")
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    tracer = sdk.TracerProvider().get_tracer("test")
    c, rec = client(lambda req, n: httpx.Response(200, json=answer()))
    state = trace.TraceState([("vendor", "x")])
    with tracer.start_as_current_span("agent step") as span:
        sc = span.get_span_context()
        parent = trace.NonRecordingSpan(trace.SpanContext(sc.trace_id, sc.span_id, True, sc.trace_flags, state))
        with trace.use_span(parent):
            c.call("payments.refund", key="k1", args={})
            c.call("payments.refund", key="k1", args={}, traceparent="00-" + "1" * 32 + "-" + "2" * 16 + "-01")
    c.call("payments.refund", key="k1", args={})
    inside, explicit, outside = rec.requests
    assert inside.headers["traceparent"] == f"00-{sc.trace_id:032x}-{sc.span_id:016x}-{int(sc.trace_flags):02x}"
    assert inside.headers["tracestate"] == "vendor=x"
    assert explicit.headers["traceparent"].startswith("00-1111") and "tracestate" not in explicit.headers
    assert "traceparent" not in outside.headers and "tracestate" not in outside.headers


def busy_problem(status, code, retry_after="0", **kw):
    """What the gateway answers for an executor's refusal for want of a
    place: 429 (over_share) or 503 (queue_full), Retry-After, the problem
    with the executor's answer."""
    ans = answer("not_executed", error={"code": code, "message": "tenant acme holds its share"},
                 retry_after_ms=1500, **kw)
    return httpx.Response(status, headers={"Content-Type": "application/problem+json", "Retry-After": retry_after},
                          json={"type": "about:blank", "title": "no place", "status": status, "code": code,
                                "limit": "executor", "answer": ans})


def test_a_refusal_for_want_of_a_place_is_sent_again_with_the_same_key():
    def h(req, n):
        if n == 1:
            return busy_problem(429, "over_share")
        if n == 2:
            return busy_problem(503, "queue_full")
        return httpx.Response(200, json=answer())
    c, rec = client(h)
    assert c.call("payments.refund", key="k1", args={}, wait=10).status == "succeeded"
    assert [q.headers["Idempotency-Key"] for q in rec.requests] == ['"k1"'] * 3


def test_refusals_that_last_raise_busy_and_the_journal_keeps_the_step_open(tmp_path):
    c, rec = client(lambda req, n: busy_problem(429, "over_share"))
    journal = toolexec.Journal(str(tmp_path / "j.sqlite"))
    with pytest.raises(toolexec.Busy) as ei:
        with journal.step("refund") as step:
            c.call("payments.refund", args={}, wait=30)
    assert len(rec.requests) == 5
    assert ei.value.result is not None and ei.value.result.busy and ei.value.code == toolexec.OVER_SHARE
    assert ei.value.result.retry_after.total_seconds() == 1.5 and ei.value.retry_after == 0
    assert "nothing ran" in str(ei.value)
    with journal.step("refund") as again:
        assert again.key == step.key and not again.completed


def test_a_busy_answer_in_a_200_is_busy_too():
    # A gateway that passes the executor's answer on as it is.
    c, _ = client(lambda req, n: httpx.Response(200, json=answer("not_executed", error={"code": "queue_full"},
                                                                retry_after_ms=20)))
    with pytest.raises(toolexec.Busy) as ei:
        c.call("payments.refund", key="k1", args={})
    assert ei.value.retry_after == 0.02 and ei.value.result.status == "not_executed"
