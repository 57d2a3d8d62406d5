"""The asyncio client: :class:`AsyncClient`, the same API as
:class:`~toolexec.Client` with ``await``.

Over Kafka the producer and the answer reader are the same background
thread as the sync client's; answers reach the event loop through
``call_soon_threadsafe``. The blocking connect (metadata, end offsets) runs
in a worker thread on first use, or on ``await client.connect()``.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from datetime import timedelta
from types import TracebackType
from typing import Any, Protocol

import httpx

from . import _http, _validate
from ._kafka import DEFAULT_CONNECT_TIMEOUT, CallbackWaiter, KafkaCore
from ._request import CALL, COMPENSATE, CallRequest, busy_pause, finish, journaled, prepare, resend, settles
from .client import DEFAULT_PREFIX, ToolInfo
from .errors import ConfigError, TransportError
from .journal import Step
from .kafka_config import load_properties
from .result import Result
from .tool import AsyncTool, P, _Spec


class _AsyncTransport(Protocol):
    async def exchange(self, req: CallRequest) -> tuple[Result | None, str]: ...

    async def get(self, tool: str, key: str) -> Result | None: ...

    async def list_tools(self) -> list[ToolInfo]: ...

    async def connect(self) -> None: ...

    async def close(self) -> None: ...


class AsyncClient:
    """Runs tool calls through the executor from asyncio code; safe for
    concurrent use by tasks of one event loop."""

    def __init__(self, transport: _AsyncTransport, *, tenant: str | None = None) -> None:
        self._t = transport
        self._tenant = tenant

    @classmethod
    def http(cls, url: str | None = None, token: str | None = None, *,
             http_client: httpx.AsyncClient | None = None, verify: bool | str = True) -> AsyncClient:
        """As :meth:`Client.http <toolexec.Client.http>`, with the same
        defaults from the environment."""
        ep = _http.endpoint(url, token)
        hc = http_client or httpx.AsyncClient(verify=verify,
                                              transport=httpx.AsyncHTTPTransport(verify=verify, retries=0))
        return cls(_AsyncHttpTransport(ep, hc))

    @classmethod
    def kafka(cls, brokers: str | list[str], config: Mapping[str, object] | None = None, *,
              config_file: str | None = None, topic_prefix: str = DEFAULT_PREFIX,
              reply_to: str | None = None, tenant: str | None = None,
              connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> AsyncClient:
        """As :meth:`Client.kafka <toolexec.Client.kafka>`, but connects on
        first use (or ``await client.connect()``)."""
        props: dict[str, object] = dict(load_properties(config_file)) if config_file else {}
        props.update(config or {})
        core = KafkaCore(brokers, props, topic_prefix, reply_to, connect_timeout)
        return cls(_AsyncKafkaTransport(core), tenant=None if tenant is None else _validate.tenant(tenant))

    async def connect(self) -> None:
        """Connects now (Kafka); errors surface here instead of at the
        first call."""
        await self._t.connect()

    async def call(self, tool: str, *, key: str | None = None, args: Mapping[str, Any] | None = None,
                   tenant: str | None = None, wait: float | timedelta | None = None,
                   step: Step | None = None, traceparent: str | None = None) -> Result:
        """As :meth:`Client.call <toolexec.Client.call>`. Cancelling the
        task stops the wait, not the call: the intent may have been sent,
        and calling again with the same key is safe."""
        req, st = prepare(CALL, tool, key, args, tenant, wait, step, traceparent, self._tenant)
        stored = journaled(req, st)
        if stored is not None:
            return stored
        last, note = await self._t.exchange(req)
        return finish(req, st, last, note)

    async def compensate(self, tool: str, *, key: str, tenant: str | None = None,
                         wait: float | timedelta | None = None) -> Result:
        req, _ = prepare(COMPENSATE, tool, key, None, tenant, wait, None, None, self._tenant)
        last, note = await self._t.exchange(req)
        return finish(req, None, last, note)

    async def get(self, tool: str, key: str) -> Result | None:
        return await self._t.get(_validate.tool(tool), _validate.key(key))

    async def list_tools(self) -> list[ToolInfo]:
        return await self._t.list_tools()

    def tool(self, name: str, *, description: str | None = None) -> Callable[[Callable[P, Any]], AsyncTool[P]]:
        """The decorator; calling the result returns an awaitable."""
        tool_name = _validate.tool(name)

        def deco(fn: Callable[P, Any]) -> AsyncTool[P]:
            return AsyncTool(self._tool_call, _Spec(tool_name, fn, description))

        return deco

    def _tool_call(self, tool: str, *, key: str | None, args: dict[str, Any], tenant: str | None,
                   wait: float | timedelta | None, step: Step | None) -> Any:
        return self.call(tool, key=key, args=args, tenant=tenant, wait=wait, step=step)

    async def aclose(self) -> None:
        await self._t.close()

    async def __aenter__(self) -> AsyncClient:
        await self.connect()
        return self

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()


class _AsyncHttpTransport:
    def __init__(self, ep: _http.Endpoint, client: httpx.AsyncClient) -> None:
        self._ep, self._url, self._token, self._c = ep, ep.url, ep.token, client

    async def connect(self) -> None:
        return None

    async def exchange(self, req: CallRequest) -> tuple[Result | None, str]:
        deadline = time.monotonic() + req.wait
        last: Result | None = None
        ours: set[str] = set()  # the intents this call's requests produced (from 202 bodies)
        failures = 0
        first = True
        while True:
            # A 202 is followed by the same POST again (same key, same
            # arguments): the gateway's cheap way to wait, never a second
            # execution. GET of the key scans the event log; it is for get().
            left = req.wait if first else max(0.0, deadline - time.monotonic())
            first = False
            plan = _http.plan_call(self._url, self._token, req, _http.server_wait(left))
            try:
                resp = await self._send(plan)
            except httpx.TransportError as e:
                desc, sent = _http.transport_failure(e)
                failures += 1
                await self._pause_or_raise(failures, None, deadline, desc, sent, None)
                continue
            reading = _http.read(resp, req)
            if reading.retry is not None:
                failures += 1
                await self._pause_or_raise(failures, reading.retry_after, deadline, reading.retry, True,
                                         reading if reading.busy else None)
                continue
            if reading.answer is not None and reading.answer.terminal:
                return _http.own_call(reading.answer, ours), ""
            last = reading.answer or reading.result or last
            if reading.result is not None and reading.result.intent_id:
                ours.add(reading.result.intent_id)
            if last is not None and last.awaiting_approval:
                return last, ""  # a person decides: posting again would not help
            left = deadline - time.monotonic()
            if left <= 0:
                return last, ""
            await asyncio.sleep(_http.poll_pause(reading.retry_after, left))

    async def _pause_or_raise(self, failures: int, retry_after: float | None, deadline: float, desc: str,
                              sent: bool, busy: _http.Reading | None) -> None:
        pause = retry_after if retry_after is not None else _http.backoff(failures)
        if failures >= _http.MAX_ATTEMPTS or time.monotonic() + pause > deadline:
            raise _http.gave_up(self._url, desc, failures, sent, busy)
        await asyncio.sleep(pause)

    async def _send(self, plan: _http.Plan) -> httpx.Response:
        resp = await self._c.request(plan.method, plan.url, headers=plan.headers, content=plan.body,
                                     timeout=plan.timeout)
        refused = _http.refused_token(resp, self._ep)
        if refused is not None:
            raise refused
        return resp

    async def get(self, tool: str, key: str) -> Result | None:
        try:
            resp = await self._send(_http.plan_get(self._url, self._token, tool, key))
        except httpx.TransportError as e:
            desc, _ = _http.transport_failure(e)
            raise TransportError(f"gateway {self._url}: {desc}", sent=False) from None
        return _http.read_current(resp, tool, key)

    async def list_tools(self) -> list[ToolInfo]:
        try:
            resp = await self._send(_http.plan_list(self._url, self._token, _http.RESPONSE_MARGIN_S * 2))
        except httpx.TransportError as e:
            desc, _ = _http.transport_failure(e)
            raise TransportError(f"gateway {self._url}: {desc}", sent=False) from None
        return [ToolInfo.from_doc(d) for d in _http.parse_tools(resp)]

    async def close(self) -> None:
        await self._c.aclose()


#: Answers kept for one waiting call (see _kafka._MAX_QUEUED_ANSWERS).
_MAX_QUEUED = 16


def _offer(queue: asyncio.Queue[Result | str], item: Result | str) -> None:
    """Queues item; when full, the oldest entry (an older pending answer:
    a terminal one ends the wait) makes room."""
    if queue.full():
        queue.get_nowait()
    queue.put_nowait(item)


class _AsyncKafkaTransport:
    def __init__(self, core: KafkaCore) -> None:
        self._core = core
        self._connected = False
        self._lock = asyncio.Lock()

    async def connect(self) -> None:
        async with self._lock:
            if not self._connected:
                await asyncio.to_thread(self._core.connect)
                self._connected = True

    async def exchange(self, req: CallRequest) -> tuple[Result | None, str]:
        await self.connect()
        deadline = time.monotonic() + req.wait
        retries = 0
        while True:
            last = await self._once(req, deadline)
            pause = None if last is None or not last.busy else busy_pause(last, retries, deadline - time.monotonic())
            if pause is None:
                break
            await asyncio.sleep(pause)
            retries += 1
            req = resend(req)
        err = self._core.last_error()
        return last, f" (last Kafka error: {err})" if err else ""

    async def _once(self, req: CallRequest, deadline: float) -> Result | None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[Result | str] = asyncio.Queue(maxsize=_MAX_QUEUED)

        def offer(item: Result | str) -> None:
            loop.call_soon_threadsafe(_offer, queue, item)

        waiter = CallbackWaiter(offer, offer)
        self._core.send(req, waiter)
        last: Result | None = None
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    return last
                try:
                    item = await asyncio.wait_for(queue.get(), left)
                except asyncio.TimeoutError:
                    return last
                if isinstance(item, str):
                    raise TransportError(f"kafka: {item}", sent=False)
                if settles(item):
                    return item
                last = item
        finally:
            self._core.forget(req.intent_id)

    async def get(self, tool: str, key: str) -> Result | None:
        raise ConfigError("get() needs the gateway: Kafka has no way to read a key without sending an intent")

    async def list_tools(self) -> list[ToolInfo]:
        raise ConfigError("list_tools() needs the gateway (AsyncClient.http)")

    async def close(self) -> None:
        await asyncio.to_thread(self._core.close)
