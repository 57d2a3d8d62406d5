"""End-to-end harness: a ledger tool server, the executor process (with its
embedded gateway), on the embedded broker or on a real Kafka.

Environment:
  TOOLEXEC_EXECUTOR   the executor binary (else built with `go build` from
                      the repository, once per session)
  KAFKA_BROKERS       a real broker; the "broker" backend is skipped without it
  TOOLEXEC_REQUIRE_GATEWAY=1   fail, instead of skipping, the HTTP tests when
                      the executor has no gateway (run-tests.sh sets it when
                      the tree has cmd/gateway)
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
READY_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ ledger


class Ledger:
    """The downstream: an HTTP tool server that records every request and
    counts effects by idempotency key (the ``X-Tool-Key`` header, which the
    executor sets to the caller's key, with ``X-Tool-Tenant``).

    Paths (a ``?delay=S`` query makes the answer wait S seconds after the
    effect, to hold a call open):
      /refund        every request is an effect: 200 {"refund_id": "rf_<n>", ...}.
                     It deliberately does not deduplicate by Idempotency-Key,
                     so a second request for a key is a second effect.
      /charge        an effect: 200 {"charge_id": "ch_<n>"}
      /reverse       an effect (a compensation): 200 {"reversed": true}
      /decline       400 {"error": "card_declined"}, no effect
      /reverse-fail  400, no effect
      /flaky         503, no effect
      /lookup        200, no effect (a read)
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[dict] = []
        self.effects = 0
        ledger = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n)
                code, resp = ledger._serve(self.path, self.headers, body)
                out = json.dumps(resp).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def do_GET(self):
                # /stats?key=K: what the ledger saw of a key (agents poll it
                # to time a crash after the tool was reached)
                q = parse_qs(urlsplit(self.path).query)
                out = json.dumps(ledger.stats(q.get("key", [""])[0])).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True, name="ledger").start()

    def _serve(self, raw_path, headers, body):
        u = urlsplit(raw_path)
        path = u.path
        delay = float(parse_qs(u.query).get("delay", ["0"])[0])
        try:
            args = json.loads(body) if body else {}
        except ValueError:
            args = None
        effect = path in ("/refund", "/charge", "/reverse")
        rec = {"path": path, "tenant": unquote(headers.get("X-Tool-Tenant", "")),
               "key": unquote(headers.get("X-Tool-Key", "")), "downstream_key": headers.get("Idempotency-Key"),
               "args": args, "effect": effect, "at": time.time()}
        with self.lock:
            self.requests.append(rec)
            if effect:
                self.effects += 1
            n = self.effects
        if delay:
            time.sleep(delay)
        code, resp = self._answer(path, args, n)
        rec["response"] = resp
        return code, resp

    def _answer(self, path, args, n):
        if path == "/refund":
            return 200, {"refund_id": f"rf_{n}", "amount": (args or {}).get("amount"), "effect": n}
        if path == "/charge":
            return 200, {"charge_id": f"ch_{n}", "amount": (args or {}).get("amount")}
        if path == "/reverse":
            return 200, {"reversed": True, "n": n}
        if path == "/decline":
            return 400, {"error": "card_declined"}
        if path == "/reverse-fail":
            return 400, {"error": "too_late_to_reverse"}
        if path == "/flaky":
            return 503, {"error": "upstream unavailable"}
        if path == "/lookup":
            return 200, {"found": True, "q": (args or {}).get("q")}
        return 404, {"error": f"no tool at {path}"}

    def stats(self, key: str, tenant: str | None = None) -> dict:
        with self.lock:
            rs = [r for r in self.requests if r["key"] == key and (tenant is None or r["tenant"] == tenant)]
        return {"requests": len(rs), "effects": sum(1 for r in rs if r["effect"]),
                "paths": [r["path"] for r in rs]}

    def effects_of(self, key: str, tenant: str | None = None, path: str | None = None) -> int:
        with self.lock:
            return sum(1 for r in self.requests if r["key"] == key and r["effect"]
                       and (tenant is None or r["tenant"] == tenant) and (path is None or r["path"] == path))

    def requests_of(self, key: str) -> list[dict]:
        with self.lock:
            return [r for r in self.requests if r["key"] == key]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# (description: is a field of the gateway's tree)
DESCRIPTION = "\n    description: Refund an order (every request to the ledger is an effect)."

TOOLS_YAML = """\
tools:
  - name: py.refund
    class: irreversible{description}
    url: {base}/refund
    timeout: 10s
    pending_ttl: 10m
  - name: py.slow_refund
    class: irreversible
    url: {base}/refund?delay=1
    timeout: 20s
    pending_ttl: 10m
  - name: py.decline
    class: irreversible
    url: {base}/decline
  - name: py.flaky
    class: irreversible
    url: {base}/flaky
    pending_ttl: 10m
  - name: py.unreachable
    class: native_key
    url: http://127.0.0.1:{closed}/refund
    retries: 1
  - name: py.charge
    class: compensatable
    url: {base}/charge
    compensate_with: py.reverse
  - name: py.reverse
    class: native_key
    url: {base}/reverse
  - name: py.charge_late
    class: compensatable
    url: {base}/charge
    compensate_with: py.reverse_fail
  - name: py.reverse_fail
    class: native_key
    url: {base}/reverse-fail
  - name: py.charge_stuck
    class: compensatable
    url: {base}/charge
    compensate_with: py.reverse_flaky
  - name: py.reverse_flaky
    class: irreversible
    url: {base}/flaky
    pending_ttl: 10m
  - name: py.lookup
    class: read_only
    url: {base}/lookup
  - name: py.small
    class: irreversible
    url: {base}/refund
    max_args_bytes: 64
  - name: py.transfer
    class: native_key
    url: {base}/charge
    approval: required
"""


# ---------------------------------------------------------------- executor


def executor_binary(workdir: str) -> str:
    b = os.environ.get("TOOLEXEC_EXECUTOR")
    if b:
        return b
    out = os.path.join(workdir, "executor")
    subprocess.run(["go", "build", "-o", out, "./cmd/executor"], cwd=ROOT, check=True, timeout=600)
    return out


def approve(ex: "Executor", key: str, reason: str) -> None:
    """An operator approves the key's request (tenant default) with the
    reconciler's CLI, built from the repository once per session."""
    global _reconciler
    if _reconciler is None:
        _reconciler = os.path.join(ex.workdir, "..", "reconciler")
        subprocess.run(["go", "build", "-o", _reconciler, "./cmd/reconciler"], cwd=ROOT, check=True, timeout=600)
    subprocess.run([_reconciler, "approve", "--brokers", ex.brokers, "--topic-prefix", ex.prefix, "--key", key,
                    "--by", "py-e2e", "--reason", reason], check=True, capture_output=True, timeout=120)


_reconciler: str | None = None


def has_gateway(binary: str) -> bool:
    p = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30)
    return "-gateway-addr" in (p.stdout + p.stderr)


class Executor:
    """One executor process; with the embedded broker when brokers is None.
    Its embedded gateway serves the tenant ``default`` with the token it
    writes to <data-dir>/gateway.token."""

    def __init__(self, binary: str, workdir: str, tools_file: str | None, brokers: str | None, gateway: bool):
        self.workdir = workdir
        self.data_dir = os.path.join(workdir, "data")
        self.http = f"127.0.0.1:{free_port()}"
        self.run_id = time.strftime("%H%M%S") + "-" + uuid.uuid4().hex[:6]
        if brokers is None:
            self.brokers = f"127.0.0.1:{free_port()}"
            self.prefix = "tool."
        else:
            self.brokers = brokers
            self.prefix = f"pyclient-{self.run_id}."
        self.gateway_addr = f"127.0.0.1:{free_port()}" if gateway else None
        # no tools file: the built-in demo tools (demo.refund, demo.echo, ...)
        tools = ["--tools", tools_file] if tools_file else []
        cmd = [binary, "--data-dir", self.data_dir, *tools, "--http-addr", self.http,
               "--reconciler-http-addr", f"127.0.0.1:{free_port()}", "--topic-prefix", self.prefix,
               "--partitions", "6", "--group", f"pyclient-{self.run_id}",
               "--reconciler-group", f"pyclient-rec-{self.run_id}"]
        if brokers is None:
            cmd += ["--embedded-addr", self.brokers]
        else:
            cmd += ["--brokers", brokers]
        if gateway:
            cmd += ["--gateway-addr", self.gateway_addr]
        self.log_path = os.path.join(workdir, "executor.log")
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.token: str | None = None

    @property
    def gateway_url(self) -> str | None:
        return f"http://{self.gateway_addr}" if self.gateway_addr else None

    def wait_ready(self) -> None:
        """Until the executor's /readyz answers 200 and, with the gateway,
        its token file exists and GET /v1/tools answers 200 with it."""
        deadline = time.monotonic() + READY_TIMEOUT_S
        self._wait(lambda: _ok(f"http://{self.http}/readyz"), "/readyz", deadline)
        if self.gateway_addr:
            self._wait(self._read_token, "gateway.token", deadline)
            self._wait(lambda: _ok(f"{self.gateway_url}/v1/tools", self.token), "the gateway", deadline)

    def _wait(self, ready, what: str, deadline: float) -> None:
        while not ready():
            if self.proc.poll() is not None:
                raise RuntimeError(f"executor exited {self.proc.returncode}; log {self.log_path}:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what} not ready after {READY_TIMEOUT_S}s; log:\n{self.tail()}")
            time.sleep(0.2)

    def _read_token(self) -> bool:
        try:
            with open(os.path.join(self.data_dir, "gateway.token")) as f:
                self.token = f.read().strip()
        except OSError:
            return False
        return bool(self.token)

    def tail(self, n: int = 60) -> str:
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def delete_topics(self) -> None:
        """Removes this run's topics from a real broker (hygiene only)."""
        from confluent_kafka.admin import AdminClient
        admin = AdminClient({"bootstrap.servers": self.brokers})
        try:
            names = [t for t in admin.list_topics(timeout=10).topics if t.startswith(self.prefix)]
            if names:
                for f in admin.delete_topics(names, operation_timeout=30).values():
                    f.result(60)
        except Exception as e:  # noqa: BLE001
            print(f"e2e: could not delete topics of {self.prefix}: {e}")


def _ok(url: str, token: str | None = None) -> bool:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, timeout=2) as r:
            return r.status == 200
    except (urllib.error.URLError, OSError):
        return False
