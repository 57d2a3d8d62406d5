"""The HTTP transport: the gateway's API (``POST /v1/tools/{tool}/calls``
with ``Idempotency-Key``, ``GET .../calls/{key}``, ``.../compensate``,
``GET /v1/tools``), following draft-ietf-httpapi-idempotency-key-header and
RFC 9457 problem details.

The functions here are pure (a request in, a plan out; a response in, a
reading out), so the sync and async clients share every rule and only own
their loops.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

import httpx

from ._request import COMPENSATE, CallRequest
from .errors import Busy, ConfigError, Error, InvalidRequest, TransportError, Unauthorized
from .result import CONFLICT, OVER_SHARE, QUEUE_FULL, REJECTED, RUNNING, ErrorInfo, Result

#: The gateway's cap on ``Prefer: wait``; longer waits poll the key.
MAX_SERVER_WAIT_S = 60
#: Extra time granted to a response beyond the wait asked of the server.
RESPONSE_MARGIN_S = 5.0
#: Requests sent for one call that failed in transit or got a 429/5xx
#: before giving up; each is safe (the same key), but a broken gateway
#: should be reported, not hammered.
MAX_ATTEMPTS = 5
#: First pause after a failed attempt, doubled each time up to the cap.
BACKOFF_S = 0.2
BACKOFF_CAP_S = 2.0
#: Bounds on the pause before sending a call again after a 202.
MIN_POLL_S = 0.2
MAX_POLL_S = 5.0
#: The problem-detail statuses that stand for an answer (docs/gateway.md):
#: 422 a conflict; 400 a rejection (by the executor, or the gateway's checks
#: of the key, the JSON and the schema); 404 an unknown tool (or, for a
#: compensation, an unknown key); 409 a compensation the executor refused;
#: 413 a body over the gateway's limit.
_STATUS_BY_HTTP = {422: CONFLICT, 400: REJECTED, 404: REJECTED, 409: REJECTED, 413: REJECTED}
_DEFAULT_CODE_BY_HTTP = {422: "args_mismatch", 400: "bad_request", 404: "unknown_tool", 409: "not_compensatable",
                         413: "payload_too_large"}


#: The embedded executor's gateway and token file, relative to the
#: directory it runs in (``go run ./cmd/executor``).
DEFAULT_URL = "http://127.0.0.1:8080"
DEFAULT_TOKEN_FILE = os.path.join("data", "gateway.token")
#: What the executor's start banner exports (cmd/executor/banner.go).
ENV_URL = "TOOLEXEC_URL"
ENV_TOKEN = "TOOLEXEC_TOKEN"
ENV_TOKEN_FILE = "TOOLEXEC_TOKEN_FILE"


@dataclass(frozen=True)
class Endpoint:
    """The gateway's URL and the bearer token, with where the token came
    from (for the message of a refused token)."""

    url: str
    token: str
    token_source: str


def endpoint(url: str | None, token: str | None) -> Endpoint:
    """The gateway to use: ``url`` else ``$TOOLEXEC_URL`` else the embedded
    default; ``token`` else ``$TOOLEXEC_TOKEN``, else the file
    ``$TOOLEXEC_TOKEN_FILE``, else ``./data/gateway.token``."""
    url = url or os.environ.get(ENV_URL) or DEFAULT_URL
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"gateway url {url!r} must start with http:// or https://")
    if token is not None:
        if not token:
            raise ConfigError("no gateway token given (token='')")
        return Endpoint(url, token, "token=")
    if os.environ.get(ENV_TOKEN):
        return Endpoint(url, os.environ[ENV_TOKEN], f"${ENV_TOKEN}")
    path = os.environ.get(ENV_TOKEN_FILE)
    source = f"${ENV_TOKEN_FILE} ({path})" if path else f"{os.path.abspath(DEFAULT_TOKEN_FILE)}, the default"
    return Endpoint(url, _read_token(path or DEFAULT_TOKEN_FILE, source), source)


def _read_token(path: str, source: str) -> str:
    try:
        with open(path, encoding="utf-8") as f:
            token = f.read().strip()
    except OSError as e:
        raise ConfigError(f"no gateway token: cannot read {source}: {e.strerror}. Run where the executor keeps its "
                          f"data (./data/gateway.token), or export {ENV_TOKEN_FILE} as the executor's start banner "
                          f"shows (or {ENV_TOKEN}, or pass token=)") from None
    if not token:
        raise ConfigError(f"no gateway token: {source} is empty")
    return token


def refused_token(resp: httpx.Response, ep: Endpoint) -> Unauthorized | None:
    """The Unauthorized that a 401 or 403 stands for, saying where this
    client's token came from and where the right one is; None otherwise."""
    if resp.status_code not in (401, 403):
        return None
    said = _detail(_json(resp)) or resp.reason_phrase
    return Unauthorized(f"gateway {ep.url} refused the token ({resp.status_code}: {said}). This client's token came "
                        f"from {ep.token_source}: export {ENV_TOKEN_FILE}=<the executor's <data-dir>/gateway.token> "
                        f"(its start banner prints the line), set {ENV_TOKEN}, or pass token=")


@dataclass(frozen=True)
class Plan:
    method: str
    url: str
    headers: dict[str, str]
    body: bytes | None
    timeout: float


@dataclass(frozen=True)
class Reading:
    """What one response means. Exactly one of the kinds is set:
    ``answer`` (final; an exception may stand for it), ``waiting`` (202:
    the key has no final answer yet; ``result`` is the answer so far,
    ``running`` or ``pending``, when the body carried one), or ``retry`` (a
    transient failure)."""

    answer: Result | None = None
    waiting: bool = False
    result: Result | None = None
    retry_after: float | None = None
    retry: str | None = None
    #: The retry is a refusal for want of a place (a 429, or the executor's
    #: over_share or queue_full): nothing ran. ``result`` is the executor's
    #: answer, when the problem carries one.
    busy: bool = False


def header_key(key: str) -> str:
    """The Idempotency-Key header value: a structured-field string (RFC
    8941), as the draft asks, for a printable ASCII key; an RFC 9651
    display string (``%"caf%c3%a9"``) for any other key, so that every key
    of the wire's grammar can be sent over HTTP."""
    if all(0x20 <= ord(c) <= 0x7E for c in key):
        return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
    out = []
    for b in key.encode("utf-8"):
        out.append(f"%{b:02x}" if b < 0x20 or b > 0x7E or b in (0x25, 0x22) else chr(b))
    return '%"' + "".join(out) + '"'


def plan_call(base: str, token: str, req: CallRequest, server_wait: float) -> Plan:
    if req.tenant is not None:
        raise InvalidRequest("over HTTP the tenant comes from the token: do not pass tenant=")
    path = f"/v1/tools/{quote(req.tool, safe='')}/calls"
    if req.type == COMPENSATE:
        path += f"/{quote(req.key, safe='')}/compensate"
        body = b""
    else:
        try:
            body = json.dumps(req.args, allow_nan=False, separators=(",", ":")).encode()
        except (TypeError, ValueError) as e:
            raise InvalidRequest(f"args cannot be sent as JSON ({e}); bytes need the Kafka transport") from None
    headers = _headers(token, server_wait, req.traceparent)
    if req.traceparent and req.tracestate:
        headers["tracestate"] = req.tracestate
    headers["Idempotency-Key"] = header_key(req.key)
    headers["Content-Type"] = "application/json"
    return Plan("POST", _url(base, path), headers, body, server_wait + RESPONSE_MARGIN_S)


def plan_get(base: str, token: str, tool: str, key: str) -> Plan:
    u = _url(base, f"/v1/tools/{quote(tool, safe='')}/calls/{quote(key, safe='')}")
    return Plan("GET", u, _headers(token, None, None), None, 2 * RESPONSE_MARGIN_S)


def plan_list(base: str, token: str, timeout: float) -> Plan:
    return Plan("GET", _url(base, "/v1/tools"), _headers(token, None, None), None, timeout)


def server_wait(left: float) -> int:
    """The ``Prefer: wait`` to ask for, in whole seconds, with time left."""
    return max(0, min(MAX_SERVER_WAIT_S, math.floor(left)))


def _headers(token: str, wait: float | None, traceparent: str | None) -> dict[str, str]:
    h = {"Authorization": f"Bearer {token}", "Accept": "application/json, application/problem+json"}
    if wait is not None:
        h["Prefer"] = f"wait={int(wait)}"
    if traceparent:
        h["traceparent"] = traceparent
    return h


def _url(base: str, path: str) -> str:
    return base.rstrip("/") + path


def own_call(answer: Result, ours: set[str]) -> Result:
    """A call() that sent its request again after a 202 gets an answer to
    the later request, a replay of the call its first request started.
    When the call that ran was started by one of this call's own requests
    (the intent ids of its 202 answers), nothing was replayed for the
    caller: ``was_replay`` is false, as it is on Kafka, where one call()
    is one intent. ``raw`` keeps what the gateway said."""
    if answer.was_replay and answer.original_intent_id is not None and answer.original_intent_id in ours:
        return replace(answer, was_replay=False)
    return answer


def read(resp: httpx.Response, req: CallRequest) -> Reading:
    """Reads a response to a call or a compensation (a refused token was
    caught before, by refused_token)."""
    code = resp.status_code
    doc = _json(resp)
    if code == 200:
        return Reading(answer=_answer(resp, doc, req))
    if code == 202:
        so_far = Result.from_wire(doc) if _is_answer(doc) else None
        return Reading(waiting=True, result=so_far, retry_after=_retry_after(resp))
    if code in _STATUS_BY_HTTP:
        return Reading(answer=_problem_answer(code, doc, req))
    if code == 429 or code >= 500:
        return Reading(retry=f"gateway answered {code} {_detail(doc) or resp.reason_phrase}",
                       retry_after=_retry_after(resp), busy=_busy(code, doc), result=_nested_answer(doc))
    raise TransportError(f"gateway: unexpected {code} {_detail(doc) or resp.reason_phrase}", sent=True)


def _answer(resp: httpx.Response, doc: Any, req: CallRequest) -> Result:
    if not _is_answer(doc):
        raise TransportError(f"gateway: a 200 without an answer: {str(doc)[:200]!r}", sent=True)
    r = Result.from_wire(doc)
    if "was_replay" not in doc:
        replayed = resp.headers.get("Idempotent-Replayed", "").strip().lower()
        if replayed in ("true", "?1"):
            r = Result.from_wire({**doc, "was_replay": True})
    return r


def _problem_answer(code: int, doc: Any, req: CallRequest) -> Result:
    """An RFC 9457 problem (400, 404, 422) as the answer it stands for. The
    gateway may embed the executor's answer; otherwise it is built from the
    problem's fields."""
    if _is_answer(doc) and doc["status"] in (CONFLICT, REJECTED):
        return Result.from_wire(doc)
    d: dict[str, Any] = doc if isinstance(doc, dict) else {}
    nested = d.get("answer")
    if isinstance(nested, dict) and _is_answer(nested):
        return Result.from_wire(nested)
    e = d.get("error")
    err: dict[str, Any] = e if isinstance(e, dict) else {}
    code_s = err.get("code") or d.get("code") or d.get("reason") or _DEFAULT_CODE_BY_HTTP[code]
    msg = err.get("message") or _detail(d) or ""
    # The detail may name an error of the list already (the gateway's names
    # the first): each is said once.
    paths = [f"{x.get('path', '')}: {x.get('message', '')}" for x in d.get("errors") or [] if isinstance(x, dict)]
    rest = [p for p in paths if p not in msg]
    if rest:
        msg = f"{msg} ({'; '.join(rest)})" if msg else "; ".join(rest)
    return Result(status=_STATUS_BY_HTTP[code], error=ErrorInfo(str(code_s), str(msg)), key=req.key,
                  tool=req.tool, intent_id=d.get("intent_id") if isinstance(d.get("intent_id"), str) else None,
                  raw=d)


def _busy(code: int, doc: Any) -> bool:
    """Whether a 429 or 5xx is a refusal for want of a place (nothing ran):
    every 429, and a 503 whose problem names the executor's code."""
    return code == 429 or (isinstance(doc, dict) and doc.get("code") in (OVER_SHARE, QUEUE_FULL))


def _nested_answer(doc: Any) -> Result | None:
    nested = doc.get("answer") if isinstance(doc, dict) else None
    return Result.from_wire(nested) if isinstance(nested, dict) and _is_answer(nested) else None


def _is_answer(doc: Any) -> bool:
    return isinstance(doc, dict) and isinstance(doc.get("status"), str) and bool(doc["status"])


def _json(resp: httpx.Response) -> Any:
    if not resp.content:
        return None
    try:
        return resp.json()
    except ValueError:
        return None


def _detail(doc: Any) -> str:
    if not isinstance(doc, dict):
        return ""
    for k in ("detail", "title"):
        v = doc.get(k)
        if isinstance(v, str) and v:
            return v
    return ""


def _retry_after(resp: httpx.Response) -> float | None:
    v = resp.headers.get("Retry-After")
    if v is None:
        return None
    try:
        return max(0.0, float(v))
    except ValueError:
        return None  # an HTTP date: use our own pace


def gave_up(url: str, desc: str, failures: int, sent: bool, busy: Reading | None) -> Error:
    """The exception of a call whose attempts ran out: Busy when the last
    was a refusal for want of a place (nothing ran), else TransportError."""
    if busy is not None:
        return Busy(f"gateway {url}: {desc} (after {failures} attempts): no place for the call; nothing ran. "
                    f"Call again later with the same key, and send less meanwhile", busy.result, busy.retry_after)
    return TransportError(f"gateway {url}: {desc} (after {failures} attempts; calling again "
                          f"with the same key and arguments is safe)", sent=sent)


def backoff(attempt: int) -> float:
    """The pause after failed attempt ``attempt`` (1-based)."""
    return float(min(BACKOFF_CAP_S, BACKOFF_S * 2.0 ** (attempt - 1)))


def poll_pause(retry_after: float | None, left: float) -> float:
    p = MIN_POLL_S if retry_after is None else min(MAX_POLL_S, max(MIN_POLL_S, retry_after))
    return max(0.0, min(p, left))


def transport_failure(e: httpx.TransportError) -> tuple[str, bool]:
    """A description and whether the request may have reached the gateway
    (a connect failure did not; a read failure may have)."""
    sent = not isinstance(e, (httpx.ConnectError, httpx.ConnectTimeout))
    return f"{type(e).__name__}: {e}", sent


def parse_tools(resp: httpx.Response) -> list[dict[str, Any]]:
    if resp.status_code != 200:
        raise TransportError(f"gateway: GET /v1/tools answered {resp.status_code}", sent=True)
    doc = _json(resp)
    tools = doc.get("tools") if isinstance(doc, dict) else doc
    if not isinstance(tools, list):
        raise TransportError("gateway: GET /v1/tools did not return a list of tools", sent=True)
    return [t for t in tools if isinstance(t, dict)]


def read_current(resp: httpx.Response, tool: str, key: str) -> Result | None:
    """Reads the answer to ``GET .../calls/{key}``: the current answer
    (``running`` or ``pending`` with a 202), None for an unknown key
    (404)."""
    code = resp.status_code
    doc = _json(resp)
    if code == 404:
        return None
    if code in (200, 202) and _is_answer(doc):
        return Result.from_wire(doc)
    if code == 202:
        return Result(status=RUNNING, key=key, tool=tool, raw=doc if isinstance(doc, dict) else {})
    raise TransportError(f"gateway: GET of key {key!r} answered {code} {_detail(doc) or resp.reason_phrase}",
                         sent=True)
