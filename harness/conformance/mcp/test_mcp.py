"""MCP conformance of the gateway with the official Python `mcp` package:
list the tools, call one twice with the same idempotency_key (one effect,
the second a replay), a conflict with other arguments, a key in doubt, a
call that waits for a person's approval, the tenant's allow-list, a wrong
token (refused in words the user sees)."""

import asyncio
import json
import uuid

import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from conftest import TOKENS


async def _with_session(url, token, fn):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1]) as s:
                await s.initialize()
                return await fn(s)


def session(gw, fn, tenant="acme"):
    return asyncio.run(_with_session(gw.url, TOKENS[tenant], fn))


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def test_list_tools_requires_a_key_where_a_record_is_kept(gw):
    tools = session(gw, lambda s: s.list_tools()).tools
    by = {t.name: t for t in tools}
    assert set(by) == {"shop.refund", "ops.page", "shop.search", "acme.only", "shop.transfer"}
    refund = by["shop.refund"]
    assert refund.description.startswith("Refund an order.")
    assert set(refund.input_schema["required"]) == {"order", "amount", "idempotency_key"}
    assert refund.input_schema["properties"]["idempotency_key"]["type"] == "string"
    assert "idempotency_key" not in by["shop.search"].input_schema.get("required", [])
    assert by["shop.search"].annotations.read_only_hint is True
    assert by["ops.page"].annotations.destructive_hint is True
    assert refund.annotations.destructive_hint is False
    assert all(t.annotations.idempotent_hint for t in tools)


def test_same_key_twice_is_one_effect_and_a_replay(gw, tools):
    key = "run-" + uuid.uuid4().hex + "/step-1"
    before = tools.total()

    async def twice(s):
        first = await s.call_tool("shop.refund", {"order": "o-1", "amount": 120, "idempotency_key": key})
        second = await s.call_tool("shop.refund", {"amount": 120.0, "order": "o-1", "idempotency_key": key})
        return first, second

    first, second = session(gw, twice)
    assert not first.is_error and not second.is_error, (text_of(first), text_of(second))
    assert first.structured_content["status"] == "succeeded"
    assert first.meta["io.toolexec/was_replay"] is False
    assert second.meta["io.toolexec/was_replay"] is True
    assert second.structured_content["was_replay"] is True
    assert second.meta["io.toolexec/original_called_at"] == first.meta["io.toolexec/original_called_at"]
    assert second.structured_content["original_intent_id"] == first.structured_content["intent_id"]
    assert "Replay" in text_of(second) and "not run again" in text_of(second)
    assert tools.total() - before == 1


def test_same_key_other_arguments_is_a_conflict(gw, tools):
    key = "run-" + uuid.uuid4().hex

    async def conflict(s):
        await s.call_tool("shop.refund", {"order": "o-2", "amount": 5, "idempotency_key": key})
        before = tools.total()
        res = await s.call_tool("shop.refund", {"order": "o-2", "amount": 6, "idempotency_key": key})
        return res, tools.total() - before

    res, ran = session(gw, conflict)
    assert res.is_error
    assert res.structured_content["status"] == "conflict"
    assert "Conflict" in text_of(res) and "Nothing ran" in text_of(res)
    assert ran == 0


def test_key_in_doubt_is_an_error_that_says_it_will_not_run_again(gw):
    key = "page-" + uuid.uuid4().hex
    for _ in range(10):  # a slow machine may end the first wait before the call started
        res = session(gw, lambda s: s.call_tool("ops.page", {"to": "oncall"},
                                                meta={"io.toolexec/idempotency-key": key, "io.toolexec/wait": 3}))
        if res.structured_content["status"] == "pending":
            break
    assert res.is_error
    assert res.structured_content["status"] == "pending"
    text = text_of(res)
    assert "unknown" in text and "investigated" in text and "will not be executed again" in text


def test_missing_key_and_bad_arguments_are_error_results(gw):
    async def mistakes(s):
        missing = await s.call_tool("shop.refund", {"order": "o-3", "amount": 1})
        bad = await s.call_tool("shop.refund", {"order": "o-3", "amount": -1, "idempotency_key": "k-bad"})
        return missing, bad

    missing, bad = session(gw, mistakes)
    assert missing.is_error and "idempotency_key is required" in text_of(missing)
    assert bad.is_error and "/amount" in text_of(bad)


def test_allow_list_hides_tools_from_other_tenants(gw):
    names = {t.name for t in session(gw, lambda s: s.list_tools(), tenant="globex").tools}
    assert "acme.only" not in names and "shop.refund" in names


def test_wrong_token_is_refused_in_words(gw):
    with pytest.raises(BaseException) as e:
        asyncio.run(_with_session(gw.url, "not-a-token", lambda s: s.list_tools()))
    errors = _mcp_errors(e.value)
    assert errors and errors[0].message == "Unauthorized (401): token unknown: it names no tenant of this gateway", e.value


def _mcp_errors(exc):
    """The MCP errors in exc, however deep the SDK's task groups nest them."""
    if isinstance(exc, MCPError):
        return [exc.error]
    return [err for sub in getattr(exc, "exceptions", ()) for err in _mcp_errors(sub)]


def test_a_call_that_needs_approval_waits_for_a_person(gw, tools):
    """A tool with approval: required: the first call is answered at once,
    not as an error, telling the model that a person decides and to ask
    again with the same key; nothing ran. Once an operator approves the key
    (reconciler approve), the same call gets the outcome: one effect."""
    key = "transfer-" + uuid.uuid4().hex
    args = {"amount": 250, "to": "acct-42", "idempotency_key": key}
    listed = {t.name: t for t in session(gw, lambda s: s.list_tools()).tools}
    assert "waits for a person's approval" in listed["shop.transfer"].description
    before = tools.total()
    first = session(gw, lambda s: s.call_tool("shop.transfer", args))
    assert not first.is_error, text_of(first)
    assert first.structured_content["status"] == "pending"
    assert first.structured_content["error"]["code"] == "awaiting_approval"
    assert first.structured_content["approval_until"] > 0
    text = text_of(first)
    assert "Waiting for a person's approval" in text and "same idempotency_key" in text and "did not run" in text
    assert tools.total() == before
    gw.approve("acme", key, "invoice 42 checked")
    done = session(gw, lambda s: s.call_tool("shop.transfer", args))
    assert not done.is_error, text_of(done)
    assert done.structured_content["status"] == "succeeded"
    assert done.structured_content["original_intent_id"] == first.structured_content["intent_id"]
    assert tools.total() - before == 1
