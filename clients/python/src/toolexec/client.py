"""The synchronous client: :class:`Client`, over HTTP (the gateway) or Kafka.

How an agent uses it (the duties, in order):

1. Create one client per process (``Client.http(url, token)`` or
   ``Client.kafka(brokers, config={...})``); it is safe for concurrent use
   by threads. Close it on shutdown (or use ``with``).
2. For every tool call, choose the idempotency key **before** the call and
   keep it in persisted state (:mod:`toolexec.keys`, or a
   :class:`~toolexec.Journal` step). Never a fresh UUID at the call.
3. ``client.call(tool, key=..., args=...)`` returns the final
   :class:`~toolexec.Result` (``succeeded``, ``failed``, ``not_executed``,
   ``compensated``, ...), or raises :class:`~toolexec.Conflict`,
   :class:`~toolexec.Rejected` or :class:`~toolexec.InDoubt`.
4. Retry freely with the same key and arguments, after any error: the tool
   runs at most once per key.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from types import TracebackType
from typing import Any, Protocol

import httpx

from . import _http, _validate
from ._kafka import DEFAULT_CONNECT_TIMEOUT, KafkaCore, QueueWaiter
from ._request import CALL, COMPENSATE, CallRequest, busy_pause, finish, journaled, prepare, resend
from .errors import ConfigError, TransportError
from .journal import Step
from .kafka_config import load_properties
from .result import Result
from .tool import P, Tool, _Spec

DEFAULT_PREFIX = "tool."


@dataclass(frozen=True)
class ToolInfo:
    """A tool the gateway lists (``GET /v1/tools``)."""

    name: str
    tool_class: str
    description: str
    input_schema: Mapping[str, Any]
    idempotency_key_required: bool

    @classmethod
    def from_doc(cls, d: Mapping[str, Any]) -> ToolInfo:
        schema = d.get("input_schema")
        return cls(name=str(d.get("name", "")), tool_class=str(d.get("class", "")),
                   description=str(d.get("description") or ""),
                   input_schema=schema if isinstance(schema, dict) else {"type": "object"},
                   idempotency_key_required=bool(d.get("idempotency_key_required", d.get("class") != "read_only")))


class _Transport(Protocol):
    def exchange(self, req: CallRequest) -> tuple[Result | None, str]: ...

    def get(self, tool: str, key: str) -> Result | None: ...

    def list_tools(self) -> list[ToolInfo]: ...

    def close(self) -> None: ...


class Client:
    """Runs tool calls through the executor; see the module doc. Build it
    with :meth:`http` or :meth:`kafka`."""

    def __init__(self, transport: _Transport, *, tenant: str | None = None) -> None:
        self._t = transport
        self._tenant = tenant

    @classmethod
    def http(cls, url: str | None = None, token: str | None = None, *, http_client: httpx.Client | None = None,
             verify: bool | str = True) -> Client:
        """A client of the gateway at ``url`` with a bearer ``token``; the
        tenant is the token's. With no arguments, the embedded executor's
        gateway: ``url`` is ``$TOOLEXEC_URL``, else
        ``http://127.0.0.1:8080``; ``token`` is ``$TOOLEXEC_TOKEN``, else
        read from the file ``$TOOLEXEC_TOKEN_FILE``, else from
        ``./data/gateway.token`` (the executor's start banner prints the
        two export lines). ``http_client`` replaces the default httpx
        client (for proxies, TLS, tests)."""
        ep = _http.endpoint(url, token)
        hc = http_client or httpx.Client(verify=verify, transport=httpx.HTTPTransport(verify=verify, retries=0))
        return cls(_HttpTransport(ep, hc))

    @classmethod
    def kafka(cls, brokers: str | list[str], config: Mapping[str, object] | None = None, *,
              config_file: str | None = None, topic_prefix: str = DEFAULT_PREFIX,
              reply_to: str | None = None, tenant: str | None = None,
              connect_timeout: float = DEFAULT_CONNECT_TIMEOUT) -> Client:
        """A client that produces intents to Kafka directly (trusted
        services). ``config`` holds Kafka client properties (the names of
        ``--kafka-config``: ``security.protocol``, ``sasl.*``, ``ssl.*``);
        ``config_file`` reads them from a properties file, ``config`` wins
        on a name set in both. Answers are read from ``reply_to`` (an
        existing topic; default ``<prefix>results``). ``tenant`` is the
        default tenant of calls (else ``default``). Connects at once."""
        props: dict[str, object] = dict(load_properties(config_file)) if config_file else {}
        props.update(config or {})
        core = KafkaCore(brokers, props, topic_prefix, reply_to, connect_timeout)
        core.connect()
        return cls(_KafkaTransport(core), tenant=None if tenant is None else _validate.tenant(tenant))

    # ---- calls

    def call(self, tool: str, *, key: str | None = None, args: Mapping[str, Any] | None = None,
             tenant: str | None = None, wait: float | timedelta | None = None, step: Step | None = None,
             traceparent: str | None = None) -> Result:
        """Calls ``tool`` once per ``key`` and returns its final answer.

        Blocks for up to ``wait`` seconds (default 10). The key is ``key``,
        else ``step``'s, else that of the journal step whose block runs; no
        key is :class:`~toolexec.MissingKey`. A step that is completed
        already is answered from the journal. Raises Conflict, Rejected
        (UnknownTool), InDoubt (NoAnswer), Unauthorized, TransportError or
        InvalidRequest (nothing was sent).
        """
        req, st = prepare(CALL, tool, key, args, tenant, wait, step, traceparent, self._tenant)
        stored = journaled(req, st)
        if stored is not None:
            return stored
        last, note = self._t.exchange(req)
        return finish(req, st, last, note)

    def compensate(self, tool: str, *, key: str, tenant: str | None = None,
                   wait: float | timedelta | None = None) -> Result:
        """Asks for the compensation of the call of ``tool`` under ``key``
        (its ``compensate_with`` tool runs once). Returns ``compensated`` or
        ``compensation_failed``; raises like :meth:`call`."""
        req, _ = prepare(COMPENSATE, tool, key, None, tenant, wait, None, None, self._tenant)
        last, note = self._t.exchange(req)
        return finish(req, None, last, note)

    def get(self, tool: str, key: str) -> Result | None:
        """The key's current answer, or None when the key is unknown to
        this tenant. Never executes anything. Gateway only."""
        return self._t.get(_validate.tool(tool), _validate.key(key))

    def list_tools(self) -> list[ToolInfo]:
        """The tools this tenant may call (gateway only)."""
        return self._t.list_tools()

    def tool(self, name: str, *, description: str | None = None) -> Callable[[Callable[P, Any]], Tool[P]]:
        """The decorator: see :mod:`toolexec.tool`."""
        tool_name = _validate.tool(name)

        def deco(fn: Callable[P, Any]) -> Tool[P]:
            return Tool(self._tool_call, _Spec(tool_name, fn, description))

        return deco

    def _tool_call(self, tool: str, *, key: str | None, args: dict[str, Any], tenant: str | None,
                   wait: float | timedelta | None, step: Step | None) -> Result:
        return self.call(tool, key=key, args=args, tenant=tenant, wait=wait, step=step)

    # ---- life cycle

    def close(self) -> None:
        self._t.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


# ------------------------------------------------------------------ transports


class _HttpTransport:
    def __init__(self, ep: _http.Endpoint, client: httpx.Client) -> None:
        self._ep, self._url, self._token, self._c = ep, ep.url, ep.token, client

    def exchange(self, req: CallRequest) -> tuple[Result | None, str]:
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
                resp = self._send(plan)
            except httpx.TransportError as e:
                desc, sent = _http.transport_failure(e)
                failures += 1
                self._pause_or_raise(failures, None, deadline, desc, sent, None)
                continue
            reading = _http.read(resp, req)
            if reading.retry is not None:
                failures += 1
                self._pause_or_raise(failures, reading.retry_after, deadline, reading.retry, True,
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
            time.sleep(_http.poll_pause(reading.retry_after, left))

    def _pause_or_raise(self, failures: int, retry_after: float | None, deadline: float, desc: str,
                        sent: bool, busy: _http.Reading | None) -> None:
        pause = retry_after if retry_after is not None else _http.backoff(failures)
        if failures >= _http.MAX_ATTEMPTS or time.monotonic() + pause > deadline:
            raise _http.gave_up(self._url, desc, failures, sent, busy)
        time.sleep(pause)

    def _send(self, plan: _http.Plan) -> httpx.Response:
        resp = self._c.request(plan.method, plan.url, headers=plan.headers, content=plan.body,
                               timeout=plan.timeout)
        refused = _http.refused_token(resp, self._ep)
        if refused is not None:
            raise refused
        return resp

    def get(self, tool: str, key: str) -> Result | None:
        plan = _http.plan_get(self._url, self._token, tool, key)
        try:
            resp = self._send(plan)
        except httpx.TransportError as e:
            desc, _ = _http.transport_failure(e)
            raise TransportError(f"gateway {self._url}: {desc}", sent=False) from None
        return _http.read_current(resp, tool, key)

    def list_tools(self) -> list[ToolInfo]:
        plan = _http.plan_list(self._url, self._token, _http.RESPONSE_MARGIN_S * 2)
        try:
            resp = self._send(plan)
        except httpx.TransportError as e:
            desc, _ = _http.transport_failure(e)
            raise TransportError(f"gateway {self._url}: {desc}", sent=False) from None
        return [ToolInfo.from_doc(d) for d in _http.parse_tools(resp)]

    def close(self) -> None:
        self._c.close()


class _KafkaTransport:
    def __init__(self, core: KafkaCore) -> None:
        self._core = core

    def exchange(self, req: CallRequest) -> tuple[Result | None, str]:
        deadline = time.monotonic() + req.wait
        retries = 0
        while True:
            last = self._once(req, deadline)
            pause = None if last is None or not last.busy else busy_pause(last, retries, deadline - time.monotonic())
            if pause is None:
                break
            time.sleep(pause)
            retries += 1
            req = resend(req)
        err = self._core.last_error()
        return last, f" (last Kafka error: {err})" if err else ""

    def _once(self, req: CallRequest, deadline: float) -> Result | None:
        w = QueueWaiter()
        self._core.send(req, w)
        try:
            return w.wait(deadline)
        finally:
            self._core.forget(req.intent_id)

    def get(self, tool: str, key: str) -> Result | None:
        raise ConfigError("get() needs the gateway: Kafka has no way to read a key without sending an intent")

    def list_tools(self) -> list[ToolInfo]:
        raise ConfigError("list_tools() needs the gateway (Client.http)")

    def close(self) -> None:
        self._core.close()
