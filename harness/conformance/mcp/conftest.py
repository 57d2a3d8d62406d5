"""The session fixture: a counting tool server, and the executor with its
embedded gateway on a real Kafka (or, with MCP_EMBEDDED=1, on its embedded
broker), with two tenants."""

import hashlib
import http.server
import json
import os
import signal
import socket
import subprocess
import threading
import time
import urllib.request
import uuid

import pytest

TOKENS = {"acme": "acme-" + uuid.uuid4().hex, "globex": "globex-" + uuid.uuid4().hex}


class ToolServer:
    """Counts requests per Idempotency-Key (the executor's downstream key).
    /ok answers 200 with the arguments; /hang never answers in time."""

    def __init__(self):
        self.calls = {}
        self.lock = threading.Lock()
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with server.lock:
                    key = self.headers.get("Idempotency-Key")
                    server.calls[key] = server.calls.get(key, 0) + 1
                if self.path == "/hang":
                    time.sleep(3)
                out = json.dumps({"ok": True, "args": json.loads(body or b"{}")}).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except OSError:
                    pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def total(self):
        with self.lock:
            return sum(self.calls.values())


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(proc, http, timeout=90):
    """Waits until the executor proc answers /readyz on http."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"executor exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://{http}/readyz", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.2)
    raise RuntimeError("executor not ready")


TOOLS = """tools:
  - name: shop.refund
    class: native_key
    url: {url}/ok
    description: Refund an order.
    input_schema:
      type: object
      required: [order, amount]
      properties:
        order: {{type: string}}
        amount: {{type: number, exclusiveMinimum: 0}}
  - name: ops.page
    class: irreversible
    url: {url}/hang
    timeout: 300ms
    pending_ttl: 5m
  - name: shop.search
    class: read_only
    url: {url}/ok
  - name: acme.only
    class: native_key
    url: {url}/ok
    tenants: [acme]
  - name: shop.transfer
    class: native_key
    url: {url}/ok
    approval: required
"""


class Gateway:
    def __init__(self, binary, workdir, tools_url):
        prefix = f"mcp{uuid.uuid4().hex[:8]}."
        self.prefix = prefix
        with open(os.path.join(workdir, "tools.yaml"), "w") as f:
            f.write(TOOLS.format(url=tools_url))
        with open(os.path.join(workdir, "tenants.yaml"), "w") as f:
            f.write("tenants:\n")
            for tenant, token in TOKENS.items():
                f.write(f"  - name: {tenant}\n    tokens: [\"sha256:{hashlib.sha256(token.encode()).hexdigest()}\"]\n")
        self.http = f"127.0.0.1:{free_port()}"
        self.gateway = f"127.0.0.1:{free_port()}"
        self.url = f"http://{self.gateway}/mcp"
        self.log = open(os.path.join(workdir, "executor.log"), "wb")
        # MCP_EMBEDDED=1: the executor's embedded default (its in-process
        # broker), instead of the real one at KAFKA_BROKERS.
        if os.environ.get("MCP_EMBEDDED") == "1":
            self.brokers = f"127.0.0.1:{free_port()}"
            where = ["--embedded-addr", self.brokers]
        else:
            self.brokers = os.environ["KAFKA_BROKERS"]
            where = ["--brokers", self.brokers]
        self.proc = subprocess.Popen(
            [binary, *where, "--data-dir", os.path.join(workdir, "data"),
             "--tools", os.path.join(workdir, "tools.yaml"), "--tenants", os.path.join(workdir, "tenants.yaml"),
             "--http-addr", self.http, "--gateway-addr", self.gateway, "--topic-prefix", prefix,
             "--group", prefix + "g", "--partitions", "3", "--reconciler=false"],
            stdout=self.log, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout=90):
        wait_ready(self.proc, self.http, timeout)

    def approve(self, tenant, key, reason):
        """An operator's approval of the key's request, by the reconciler's
        CLI (it reads the request from the log and binds to its arguments)."""
        subprocess.run([os.environ["MCP_RECONCILER"], "approve", "--brokers", self.brokers,
                        "--topic-prefix", self.prefix, "--tenant", tenant, "--key", key, "--by", "conformance",
                        "--reason", reason], check=True, capture_output=True, timeout=120)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


@pytest.fixture(scope="session")
def tools():
    return ToolServer()


@pytest.fixture(scope="session")
def gw(tools):
    g = Gateway(os.environ["MCP_EXECUTOR"], os.environ["MCP_WORKDIR"], tools.url)
    g.wait_ready()
    yield g
    assert g.stop() == 0
