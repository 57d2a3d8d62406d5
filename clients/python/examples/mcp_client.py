"""An MCP client of toolexec's gateway, with the official Python SDK.

It lists the tools, calls demo.refund twice with the same idempotency_key
(one refund: the second answer is a replay of the first), and shows what a
wrong token looks like.

    pip install "mcp==2.3.0"
    python clients/python/examples/mcp_client.py

Run it next to `go run ./cmd/executor` (the embedded gateway on
http://127.0.0.1:8080, its token in ./data/gateway.token), or anywhere
after the two `export` lines the executor prints at start (TOOLEXEC_URL,
TOOLEXEC_TOKEN_FILE).

The token goes in an Authorization header on the HTTP client the SDK is
given, as any MCP host's `headers` setting does. A refused token is a 401
whose JSON-RPC error says what was wrong: the SDK raises it as MCPError
(inside the ExceptionGroup of its task group).
"""

import asyncio
import os
import pathlib
import sys
import uuid

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

URL = os.environ.get("TOOLEXEC_URL", "http://127.0.0.1:8080").rstrip("/") + "/mcp"
TOKEN_FILE = os.environ.get("TOOLEXEC_TOKEN_FILE", "data/gateway.token")


async def with_session(token, work):
    """Runs work(session) in an MCP session authenticated by token."""
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
        async with streamable_http_client(URL, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                return await work(session)


def text_of(result):
    return "".join(c.text for c in result.content if getattr(c, "type", "") == "text")


async def refund_twice(session):
    tools = await session.list_tools()
    print("tools:", ", ".join(t.name for t in tools.tools))
    # The agent chooses the key from its run and step, keeps it, and sends
    # it again on every retry; a fresh one here, so that each run refunds.
    args = {"amount": 30, "idempotency_key": "mcp-example-" + uuid.uuid4().hex[:12]}
    first = await session.call_tool("demo.refund", args)
    again = await session.call_tool("demo.refund", args)  # a retry: the same key and arguments
    for name, r in (("first call", first), ("same key again", again)):
        sc = r.structured_content or {}
        print(f"{name}: status {sc.get('status')}, refund_id {(sc.get('result') or {}).get('refund_id')}, "
              f"was_replay {r.meta.get('io.toolexec/was_replay')}")
    print("the replay says:", text_of(again).splitlines()[0])


def mcp_errors(exc):
    """The MCP errors in exc, however deep the SDK's task groups nest them."""
    if isinstance(exc, MCPError):
        return [exc.error]
    return [e for sub in getattr(exc, "exceptions", ()) for e in mcp_errors(sub)]


async def wrong_token():
    refused = []
    try:
        await with_session("not-the-token", lambda s: s.list_tools())
    except* MCPError as group:
        refused = mcp_errors(group)
    if not refused:
        sys.exit("a wrong token was accepted")
    print(f"wrong token: MCPError({refused[0].code}): {refused[0].message}")


def main():
    token = pathlib.Path(TOKEN_FILE).read_text().strip()
    asyncio.run(with_session(token, refund_twice))
    asyncio.run(wrong_token())


if __name__ == "__main__":
    main()
