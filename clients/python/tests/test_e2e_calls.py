"""Every answer status and exception, through both transports, against the
executor on its embedded broker and on a real Kafka (the `target` fixture:
embedded-kafka, embedded-http, broker-kafka, broker-http). The ledger counts
what the tool really did."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import uuid

import pytest

import e2e
import toolexec
from toolexec import Conflict, InDoubt, Journal, NoAnswer, Rejected, Result, UnknownTool

HERE = os.path.dirname(__file__)


def slow_on_the_broker(target):
    """Subprocess-heavy cases run on the real broker only in the long form
    (TOOLEXEC_PY_LONG=1); the embedded backend runs them always."""
    if target.backend == "broker" and os.environ.get("TOOLEXEC_PY_LONG") != "1":
        pytest.skip("long form only on the real broker (TOOLEXEC_PY_LONG=1)")


def new_key(name):
    return f"{name}-{uuid.uuid4().hex[:12]}"


def test_a_call_runs_once_and_its_duplicate_is_a_replay(client, ledger):
    key = new_key("refund")
    first = client.call("py.refund", key=key, args={"order": "o-1", "amount": 120, "currency": "EUR"})
    assert first.status == "succeeded" and not first.was_replay
    assert first.result["refund_id"].startswith("rf_") and first.original_intent_id == first.intent_id
    # the same call again: other key order, 120.0 for 120
    again = client.call("py.refund", key=key, args={"currency": "EUR", "amount": 120.0, "order": "o-1"})
    assert again.status == "succeeded" and again.was_replay
    assert again.result == first.result
    assert again.original_intent_id == first.intent_id != again.intent_id
    assert again.original_called_at == first.original_called_at is not None
    assert ledger.effects_of(key) == 1


def test_the_same_key_with_other_arguments_is_a_conflict(client, ledger):
    key = new_key("refund")
    client.call("py.refund", key=key, args={"amount": 5})
    with pytest.raises(Conflict) as ei:
        client.call("py.refund", key=key, args={"amount": 6})
    assert ei.value.result.status == "conflict" and ei.value.code == "args_mismatch"
    assert "Send the original arguments, or use a new key" in str(ei.value)
    with pytest.raises(Conflict):
        client.call("py.decline", key=key, args={"amount": 5})  # another tool, same key
    assert ledger.effects_of(key) == 1


def test_a_call_that_needs_approval_waits_for_a_person(target, client, ledger, tmp_path):
    """approval: required: the call raises ApprovalPending at once and runs
    nothing; the journal step keeps its key; once an operator approves,
    the same step's call gets the outcome, and the tool ran once."""
    import time
    args = {"amount": 250, "to": "acct-42"}
    with Journal(str(tmp_path / "j.sqlite")) as j:
        t0 = time.monotonic()
        with pytest.raises(toolexec.ApprovalPending) as ei:
            with j.step("transfer") as step:
                key = step.key
                client.call("py.transfer", args=args, wait=30)
        assert time.monotonic() - t0 < 20, "a call awaiting approval must not wait out its wait"
        assert ei.value.code == toolexec.AWAITING_APPROVAL and ei.value.approval_until is not None
        assert ledger.effects_of(key) == 0
        e2e.approve(target.executor, key, "invoice 42 checked")
        with j.step("transfer") as again:
            assert again.key == key
            r = client.call("py.transfer", args=args, wait=30)
    assert r.status == "succeeded" and r.original_intent_id == ei.value.result.original_intent_id
    assert ledger.effects_of(key) == 1


def test_a_tool_that_refuses_is_failed_and_replayed_as_failed(client, ledger):
    key = new_key("decline")
    r = client.call("py.decline", key=key, args={"amount": 5})
    assert r.status == "failed" and r.error.code == "http_400" and "card_declined" in r.error.message
    again = client.call("py.decline", key=key, args={"amount": 5})
    assert again.status == "failed" and again.was_replay
    assert len(ledger.requests_of(key)) == 1


def test_a_tool_never_reached_is_not_executed(client):
    key = new_key("unreachable")
    r = client.call("py.unreachable", key=key, args={"amount": 5}, wait=30)
    assert r.status == "not_executed" and r.error.code == "connection_refused"
    # the key is free again: it runs anew (and is never reached again)
    r2 = client.call("py.unreachable", key=key, args={"amount": 5}, wait=30)
    assert r2.status == "not_executed" and r2.attempt == 2 and r2.previous_status == "not_executed"


def in_doubt(client, tool, key, args, attempts=5):
    """Calls until the answer is the pending one (InDoubt, not NoAnswer):
    each call waits 1 s, and a loaded machine may need more than one."""
    for _ in range(attempts):
        try:
            client.call(tool, key=key, args=args, wait=1)
        except NoAnswer:
            continue
        except InDoubt as e:
            return e
    raise AssertionError(f"no pending answer for {key} after {attempts} calls")


def test_an_answer_lost_in_the_crash_window_is_in_doubt(client, ledger):
    key = new_key("flaky")
    e = in_doubt(client, "py.flaky", key, {"to": "oncall"})
    assert type(e) is InDoubt
    assert e.result.status == "pending" and e.code == "in_doubt"
    assert "same key and arguments is safe" in str(e)
    again = in_doubt(client, "py.flaky", key, {"to": "oncall"})  # a retry: parked too
    assert again.result.status == "pending" and again.result.was_replay
    assert len(ledger.requests_of(key)) == 1  # parked, never called again


def test_an_unknown_tool_is_rejected(client, target):
    with pytest.raises(UnknownTool) as ei:
        client.call("py.no_such_tool", key=new_key("x"), args={})
    assert ei.value.code == "unknown_tool" and ei.value.result.status == "rejected"
    assert "client.list_tools()" in str(ei.value)
    if target.transport == "http":  # the gateway knows the tenant's tools: a typo gets a suggestion
        with pytest.raises(UnknownTool, match="did you mean py.refund\\?"):
            client.call("py.refnd", key=new_key("x"), args={})


def test_arguments_over_the_tools_limit_are_rejected(client, ledger):
    key = new_key("small")
    with pytest.raises(Rejected) as ei:
        client.call("py.small", key=key, args={"note": "x" * 100})
    assert ei.value.code == "oversized" and not isinstance(ei.value, UnknownTool)
    assert ledger.requests_of(key) == []


def test_a_compensation_runs_once(client, ledger):
    key = new_key("charge")
    c = client.call("py.charge", key=key, args={"amount": 30})
    assert c.status == "succeeded"
    comp = client.compensate("py.charge", key=key, wait=20)
    assert comp.status == "compensated" and not comp.was_replay
    again = client.compensate("py.charge", key=key, wait=20)
    assert again.status == "compensated" and again.was_replay
    assert ledger.effects_of(key, path="/charge") == 1 and ledger.effects_of(key, path="/reverse") == 1


def test_a_compensation_the_tool_refuses_is_compensation_failed(client, ledger):
    key = new_key("charge-late")
    client.call("py.charge_late", key=key, args={"amount": 30})
    r = client.compensate("py.charge_late", key=key, wait=20)
    assert r.status == "compensation_failed" and r.error.code == "http_400"


def test_a_compensation_whose_answer_is_lost_is_in_doubt(client, ledger):
    key = new_key("charge-stuck")
    client.call("py.charge_stuck", key=key, args={"amount": 30})
    for _ in range(5):  # until the compensation_pending answer (not NoAnswer)
        try:
            client.compensate("py.charge_stuck", key=key, wait=1)
        except NoAnswer:
            continue
        except InDoubt as e:
            assert e.result.status == "compensation_pending" and e.code == "in_doubt"
            break
    else:
        raise AssertionError("no compensation_pending answer")
    assert [r["path"] for r in ledger.requests_of(key)] == ["/charge", "/flaky"]


# The status "resolved" answers an operator's or the reconciler's resolve
# command on the control topic, which agents never send: the client has no
# way (and no need) to produce it.


def test_a_call_still_running_when_the_wait_ends_is_answered_on_the_next_call(client, ledger):
    key = new_key("slow")
    with pytest.raises(NoAnswer) as ei:
        client.call("py.slow_refund", key=key, args={"amount": 7}, wait=0.5)
    assert isinstance(ei.value, InDoubt)
    r = client.call("py.slow_refund", key=key, args={"amount": 7}, wait=20)
    assert r.status == "succeeded" and r.was_replay
    assert ledger.effects_of(key) == 1


def test_concurrent_duplicates_from_asyncio_make_one_effect(target, ledger):
    key = new_key("async")

    async def main():
        async with target.async_client() as ac:
            return await asyncio.gather(*[ac.call("py.slow_refund", key=key, args={"amount": 9}, wait=20)
                                          for _ in range(5)])

    results = asyncio.run(main())
    assert {r.status for r in results} == {"succeeded"}
    assert len({r.result["refund_id"] for r in results}) == 1
    assert sorted(r.was_replay for r in results) == [False, True, True, True, True]
    assert ledger.effects_of(key) == 1


def test_read_only_calls_run_every_time(client, ledger):
    key = new_key("lookup")
    for _ in range(2):
        r = client.call("py.lookup", key=key, args={"q": "order o-1"})
        assert r.status == "succeeded" and r.result == {"found": True, "q": "order o-1"} and not r.was_replay
    assert len(ledger.requests_of(key)) == 2


def test_the_decorator_takes_its_key_from_the_journal_step(client, ledger, tmp_path):
    @client.tool("py.refund")
    def refund(order_id: str, amount: int) -> Result:
        """Refund an order."""

    with Journal(str(tmp_path / "j.sqlite")) as j:
        with j.step("refund-o-9") as step:
            r = refund(order_id="o-9", amount=12)
            key = step.key
        assert r.status == "succeeded" and j.get("refund-o-9").status == "completed"
        with j.step("refund-o-9"):
            r2 = refund(order_id="o-9", amount=12)
        assert r2.journaled and r2.result == r.result
        # without the journal, the executor itself replays the key
        r3 = refund.using(key=key)(order_id="o-9", amount=12)
        assert r3.was_replay and r3.result == r.result
    with pytest.raises(toolexec.MissingKey):
        refund(order_id="o-9", amount=12)
    assert ledger.effects_of(key) == 1


AGENT = textwrap.dedent("""
    import json, os, signal, sys, time, urllib.request
    sys.path.insert(0, {here!r})
    from agent_env import make_client
    import toolexec

    client = make_client()
    journal = toolexec.Journal(sys.argv[1])
    with journal.step("refund-order-77") as step:
        print(json.dumps({{"key": step.key, "resumed": step.resumed}}), flush=True)
        try:
            r = client.call("py.slow_refund", args={{"order": "o-77", "amount": 40}}, wait=float(sys.argv[2]))
            print(json.dumps({{"status": r.status, "was_replay": r.was_replay, "result": r.result}}), flush=True)
        except toolexec.NoAnswer:
            # the intent is out and the tool is working: wait until the
            # ledger has the request, then die before anything is recorded
            url = os.environ["LEDGER_URL"] + "/stats?key=" + step.key
            for _ in range(200):
                if json.load(urllib.request.urlopen(url))["requests"] > 0:
                    break
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGKILL)
""")


def test_a_journal_step_killed_mid_call_is_sent_again_under_its_key(target, ledger, tmp_path):
    slow_on_the_broker(target)
    journal = str(tmp_path / "agent.sqlite")
    script = AGENT.format(here=HERE)
    env = {**os.environ, **target.agent_env()}
    p1 = subprocess.run([sys.executable, "-c", script, journal, "0.3"], env=env, capture_output=True,
                        text=True, timeout=120)
    assert p1.returncode == -signal.SIGKILL, p1.stderr
    first = _json_lines(p1.stdout)
    key = first[0]["key"]
    assert not first[0]["resumed"] and len(first) == 1
    assert Journal(journal).get("refund-order-77").status == "in_progress"
    p2 = subprocess.run([sys.executable, "-c", script, journal, "20"], env=env, capture_output=True,
                        text=True, timeout=120)
    assert p2.returncode == 0, p2.stderr
    second = _json_lines(p2.stdout)
    assert second[0] == {"key": key, "resumed": True}
    assert second[1]["status"] == "succeeded" and second[1]["was_replay"]
    rec = Journal(journal).get("refund-order-77")
    assert rec.status == "completed" and rec.answer.result == second[1]["result"]
    assert ledger.effects_of(key) == 1


def _json_lines(out):
    import json
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


# ---- one transport, or both at once (embedded backend)


def test_a_key_called_over_kafka_is_replayed_over_http(env, ledger):
    from conftest import Target
    k, h = Target(env, "embedded", "kafka"), Target(env, "embedded", "http")
    key = new_key("cross")
    with k.client() as kc, h.client() as hc:
        first = kc.call("py.refund", key=key, args={"amount": 3})  # tenant "default", as the token's
        again = hc.call("py.refund", key=key, args={"amount": 3.0})
    assert not first.was_replay and again.was_replay and again.result == first.result
    assert again.original_called_at == first.original_called_at and again.tenant == "default"
    assert ledger.effects_of(key) == 1


def test_over_http_get_never_executes_and_the_tools_are_listed(env, ledger):
    from conftest import Target
    t = Target(env, "embedded", "http")
    key = new_key("get")
    with t.client() as c:
        assert c.get("py.refund", key) is None  # unknown: nothing runs
        first = c.call("py.refund", key=key, args={"amount": 4})
        current = c.get("py.refund", key)
        tools = {ti.name: ti for ti in c.list_tools()}
    assert current.status == "succeeded" and current.result == first.result
    assert current.original_intent_id == first.intent_id
    assert ledger.effects_of(key) == 1
    assert tools["py.refund"].tool_class == "irreversible" and tools["py.refund"].idempotency_key_required
    assert tools["py.refund"].description.startswith("Refund an order")
    assert tools["py.lookup"].tool_class == "read_only" and not tools["py.lookup"].idempotency_key_required


def test_over_http_a_wrong_token_is_unauthorized(env, ledger):
    from conftest import Target
    t = Target(env, "embedded", "http")
    key = new_key("unauth")
    with toolexec.Client.http(t.executor.gateway_url, "tx_not-a-token") as c:
        with pytest.raises(toolexec.Unauthorized) as ei:
            c.call("py.refund", key=key, args={"amount": 1})
        msg = str(ei.value)
        assert "token unknown" in msg and "keeps it in <data-dir>/gateway.token" in msg, msg
        with pytest.raises(toolexec.Unauthorized):
            c.list_tools()
    assert ledger.requests_of(key) == []


def test_over_kafka_tenants_are_separate_key_spaces(env, ledger):
    from conftest import Target
    t = Target(env, "embedded", "kafka")
    key = new_key("tenant")
    ex = t.executor
    with toolexec.Client.kafka(ex.brokers, topic_prefix=ex.prefix, tenant="acme") as acme:
        a = acme.call("py.refund", key=key, args={"amount": 1})
        g = acme.call("py.refund", key=key, args={"amount": 1}, tenant="globex")
        a2 = acme.call("py.refund", key=key, args={"amount": 1})
    assert (a.tenant, g.tenant) == ("acme", "globex")
    assert not a.was_replay and not g.was_replay and a2.was_replay
    assert ledger.effects_of(key, tenant="acme") == 1 and ledger.effects_of(key, tenant="globex") == 1


def test_a_kafka_client_with_a_missing_reply_topic_or_no_broker_fails_clearly(env):
    from conftest import Target
    ex = Target(env, "embedded", "kafka").executor
    with pytest.raises(toolexec.ConfigError, match="no-such-topic"):
        toolexec.Client.kafka(ex.brokers, topic_prefix=ex.prefix, reply_to="no-such-topic", connect_timeout=10)
    with pytest.raises(toolexec.TransportError):
        toolexec.Client.kafka(f"127.0.0.1:{e2e_free_port()}", connect_timeout=2)


def e2e_free_port():
    import e2e
    return e2e.free_port()
