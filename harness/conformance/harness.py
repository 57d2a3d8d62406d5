"""Test harness: a recording HTTP tool server, the executor process, topic
readers and a producer. Only confluent-kafka, msgpack and the standard
library are used.
"""

import json
import urllib.parse
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

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaError, Producer,
                             TopicPartition)
from confluent_kafka.admin import AdminClient, NewTopic

import wire

ANSWER_TIMEOUT = float(os.environ.get("CONFORMANCE_ANSWER_TIMEOUT", "30"))


def kafka_conf(path):
    """librdkafka settings of a Kafka client properties file: the same
    file the Go commands take with --kafka-config (security.protocol,
    sasl.*, ssl.*). Values are taken as written (librdkafka expands no
    ${env:} references)."""
    conf = {}
    if not path:
        return conf
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line[0] in "#!":
                continue
            k, _, v = line.partition("=")
            conf[k.strip()] = v.strip()
    conf.pop("bootstrap.servers", None)  # KAFKA_BROKERS names the seeds
    return conf


# CONFORMANCE_KAFKA_CONFIG: the harness's own clients (it reads the event
# log, writes the control topic and creates topics: an admin).
# CONFORMANCE_EXECUTOR_KAFKA_CONFIG: the executor's --kafka-config (default
# the harness's); when it differs, the executor may not create topics, and
# the harness creates them first.
KAFKA_CONFIG = os.environ.get("CONFORMANCE_KAFKA_CONFIG", "")
EXECUTOR_KAFKA_CONFIG = os.environ.get("CONFORMANCE_EXECUTOR_KAFKA_CONFIG", KAFKA_CONFIG)
KAFKA_CONF = kafka_conf(KAFKA_CONFIG)


def client_conf(brokers, **extra):
    return {**KAFKA_CONF, "bootstrap.servers": brokers, **extra}


# --------------------------------------------------------------- tool server

class ToolServer:
    """Records every request (path, headers, JSON body, Idempotency-Key) and
    answers by path: /charge 200 JSON, /reject 400 JSON, /lookup 200 JSON,
    /flaky 503, /unbook 200 JSON, /bigint 200 JSON with a 2^53+1 integer."""

    def __init__(self):
        self.requests = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def do_POST(self):
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                code, resp = server.respond(self.path, body)
                rec = {
                    "path": self.path,
                    "headers": {k.lower(): v for k, v in self.headers.items()},
                    "idempotency_key": self.headers.get("Idempotency-Key"),
                    "raw": raw,
                    "body": body,
                    "status": code,
                    "response": resp,
                    "at": time.time(),
                }
                with server.lock:
                    server.requests.append(rec)
                out = json.dumps(resp).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path):
        return f"http://127.0.0.1:{self.port}{path}"

    def respond(self, path, body):
        body = body if isinstance(body, dict) else {}
        with self.lock:
            n = len(self.requests) + 1
        if path == "/charge":
            return 200, {"charge_id": f"ch_{n}", "amount": body.get("amount"),
                         "currency": body.get("currency"), "captured": True,
                         "fee": 1.5, "tags": ["a", "b"]}
        if path == "/reject":
            return 400, {"error": "card_declined", "n": n}
        if path == "/lookup":
            return 200, {"found": True, "q": body.get("q"), "n": n}
        if path == "/flaky":
            return 503, {"error": "upstream unavailable"}
        if path == "/unbook":
            return 200, {"cancelled": True, "n": n}
        if path == "/bigint":
            return 200, {"id": 9007199254740993, "count": 120}
        return 404, {"error": "no such tool path"}

    def by_key(self, idem_key):
        with self.lock:
            return [r for r in self.requests if r["idempotency_key"] == idem_key]

    # The path each tool of TOOLS_YAML posts to.
    PATHS = {"conf.charge": "/charge", "conf.small": "/charge", "conf.book": "/charge",
             "payments.charge": "/charge", "conf.reject": "/reject", "conf.lookup": "/lookup",
             "conf.lookup-flaky": "/flaky", "conf.flaky": "/flaky", "conf.unbook": "/unbook",
             "conf.bigint": "/bigint"}

    def calls(self, tenant, key, tool=None):
        """The requests made for (tenant, key), of one tool's path when given,
        whatever their downstream key: each call of a key has its own
        (saga/downstream.go), so a second effect of a key under another key
        shows here."""
        path = self.PATHS[tool] if tool else None
        with self.lock:
            return [r for r in self.requests
                    if r["headers"].get("x-tool-tenant") == tenant
                    and urllib.parse.unquote_plus(r["headers"].get("x-tool-key", "")) == key
                    and (path is None or r["path"] == path)]

    def all(self):
        with self.lock:
            return list(self.requests)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


# ------------------------------------------------------------- topic reader

class Record:
    __slots__ = ("topic", "partition", "offset", "key", "value", "headers", "msg")

    def __init__(self, m):
        self.topic, self.partition, self.offset = m.topic(), m.partition(), m.offset()
        self.key, self.value = m.key(), m.value()
        self.headers = list(m.headers() or [])
        try:
            self.msg = wire.unpack(self.value) if self.value is not None else None
        except Exception:  # noqa: BLE001 - raw bytes stay available
            self.msg = None

    def header(self, name):
        for k, v in self.headers:
            if k == name:
                return v.decode() if isinstance(v, bytes) else v
        return None

    def __repr__(self):
        return f"<{self.topic}[{self.partition}]@{self.offset} key={self.key!r} {self.msg!r}>"


class TopicReader:
    """Reads every partition of one topic from the beginning,
    read_committed, in a background thread, and keeps every record."""

    def __init__(self, brokers, topic):
        self.topic = topic
        self.records = []
        self.errors = []
        self.cond = threading.Condition()
        self.stop = threading.Event()
        self.c = Consumer({
            **KAFKA_CONF,
            "bootstrap.servers": brokers,
            "group.id": "conformance-reader-" + uuid.uuid4().hex,
            "enable.auto.commit": False,
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        })
        parts = self.c.list_topics(topic, timeout=15).topics[topic].partitions
        self.partitions = len(parts)
        self.c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
        self.thread = threading.Thread(target=self._run, daemon=True, name=f"reader-{topic}")
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            m = self.c.poll(0.1)
            if m is None:
                continue
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    self.errors.append(m.error())
                continue
            rec = Record(m)
            with self.cond:
                self.records.append(rec)
                self.cond.notify_all()

    def wait(self, pred, count=1, timeout=ANSWER_TIMEOUT, what="records"):
        """Waits until at least count records match pred; returns them."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                got = [r for r in self.records if pred(r)]
                if len(got) >= count:
                    return got
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"timeout after {timeout}s waiting for {count} {what} on {self.topic}; "
                        f"got {len(got)}: {got!r}")
                self.cond.wait(min(left, 0.5))

    def matching(self, pred):
        with self.cond:
            return [r for r in self.records if pred(r)]

    def close(self):
        self.stop.set()
        self.thread.join(5)
        self.c.close()


# ------------------------------------------------------------------ executor

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TOOLS_YAML = """\
tools:
  - name: conf.charge
    class: native_key
    url: {base}/charge
    timeout: 5s
    pending_ttl: 2m
    retention: 24h
  - name: conf.reject
    class: irreversible
    url: {base}/reject
  - name: conf.lookup
    class: read_only
    url: {base}/lookup
  - name: conf.lookup-flaky
    class: read_only
    url: {base}/flaky
  - name: conf.flaky
    class: irreversible
    url: {base}/flaky
  - name: conf.book
    class: compensatable
    url: {base}/charge
    compensate_with: conf.unbook
  - name: conf.unbook
    class: native_key
    url: {base}/unbook
  - name: conf.bigint
    class: native_key
    url: {base}/bigint
  - name: conf.small
    class: native_key
    url: {base}/charge
    max_args_bytes: 64
  # the tool of the examples in docs/wire-format.md
  - name: payments.charge
    class: native_key
    url: {base}/charge
"""


class Executor:
    def __init__(self, binary, brokers, workdir, base_url, prefix, group, partitions):
        self.workdir = workdir
        self.tools_file = os.path.join(workdir, "tools.yaml")
        with open(self.tools_file, "w") as f:
            f.write(TOOLS_YAML.format(base=base_url))
        self.http = f"127.0.0.1:{free_port()}"
        self.log_path = os.path.join(workdir, "executor.log")
        self.log = open(self.log_path, "wb")
        self.cmd = [binary, "--brokers", brokers, "--data-dir", os.path.join(workdir, "data"),
                    "--tools", self.tools_file, "--http-addr", self.http, "--topic-prefix", prefix,
                    "--group", group, "--partitions", str(partitions), "--gateway=false"]
        if EXECUTOR_KAFKA_CONFIG:
            self.cmd += ["--kafka-config", EXECUTOR_KAFKA_CONFIG]
        self.proc = subprocess.Popen(self.cmd, stdout=self.log, stderr=subprocess.STDOUT)
        self.exit_code = None

    def wait_ready(self, timeout=90):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"executor exited with {self.proc.returncode} before /readyz; log: {self.log_path}")
            try:
                with urllib.request.urlopen(f"http://{self.http}/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        raise RuntimeError(f"executor not ready after {timeout}s; log: {self.log_path}")

    def stop(self, timeout=40):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.exit_code = self.proc.returncode
        self.log.close()
        return self.exit_code


# ------------------------------------------------------------------- harness

class Harness:
    def __init__(self, binary, brokers, workdir):
        self.brokers = brokers
        self.run_id = time.strftime("%Y%m%d%H%M%S") + "-" + uuid.uuid4().hex[:6]
        # Under ACLs the prefix and group are the executor role's
        # (CONFORMANCE_PREFIX_BASE=tool.conformance-, CONFORMANCE_GROUP=tool-executor).
        self.prefix = os.environ.get("CONFORMANCE_PREFIX_BASE", "conformance-") + self.run_id + "."
        self.own_group = "CONFORMANCE_GROUP" not in os.environ
        self.group = os.environ.get("CONFORMANCE_GROUP", f"conformance-{self.run_id}")
        self.tenant = "conf"
        self.partitions = 6
        self.topics = {n: self.prefix + n for n in ("intents", "control", "events", "results", "deadletter")}
        self.extra_topics = []
        self.tools = ToolServer()
        self.admin = AdminClient(client_conf(brokers))
        if EXECUTOR_KAFKA_CONFIG != KAFKA_CONFIG:
            for name in self.topics:
                self.create_topic(self.topics[name], self.partitions, own=False)
            # The routing partition count's topic (compacted, one
            # partition), which a least-privilege executor may not create.
            self.create_topic(self.prefix + "meta", 1, own=False, config={"cleanup.policy": "compact"})
        self.executor = Executor(binary, brokers, workdir, self.tools.url(""), self.prefix,
                                 self.group, self.partitions)
        self.readers = {}
        self.producer = None
        self.executor.wait_ready()
        for name in ("results", "deadletter", "events", "intents"):
            self.readers[name] = TopicReader(brokers, self.topics[name])
        # librdkafka's default partitioner (consistent_random: CRC32 of the
        # key) is deliberately left alone.
        self.producer = Producer(client_conf(brokers, **{"enable.idempotence": True, "linger.ms": 0}))

    # ---- producing

    def key(self, name):
        """A key unique to this run."""
        return f"{name}-{self.run_id}-{uuid.uuid4().hex[:8]}"

    def new_id(self):
        return "it-" + uuid.uuid4().hex

    def produce_raw(self, value, kafka_key, headers=None, topic=None):
        """Produces one record with the default partitioner; returns its
        (partition, offset) from the delivery report."""
        topic = topic or self.topics["intents"]
        out = {}

        def dr(err, msg):
            out["err"], out["p"], out["o"] = err, msg.partition(), msg.offset()

        if isinstance(kafka_key, str):
            kafka_key = kafka_key.encode()
        self.producer.produce(topic, value=value, key=kafka_key, headers=headers or None, on_delivery=dr)
        left = self.producer.flush(30)
        assert left == 0 and out.get("err") is None, f"produce failed: {out}"
        return out["p"], out["o"]

    def send(self, msg, kafka_key=None, headers=None, topic=None):
        """Produces an intent map keyed <tenant>/<key> (or kafka_key)."""
        if kafka_key is None:
            kafka_key = wire.routing_key(msg.get("tenant", "default"), msg["key"])
        return self.produce_raw(wire.pack(msg), kafka_key, headers, topic)

    # ---- answers

    def answers(self, intent_id, reader="results"):
        return self.readers[reader].matching(lambda r: r.msg and r.msg.get("intent_id") == intent_id)

    def answer(self, intent_id, reader="results", timeout=ANSWER_TIMEOUT):
        """Waits for the terminal answer of intent_id and returns its record."""
        recs = self.readers[reader].wait(
            lambda r: isinstance(r.msg, dict) and r.msg.get("intent_id") == intent_id
            and wire.is_terminal(r.msg.get("status")),
            timeout=timeout, what=f"terminal answers to {intent_id}")
        return recs[0]

    def dead_letters(self, value):
        return self.readers["deadletter"].matching(lambda r: isinstance(r.msg, dict) and r.msg.get("value") == value)

    def dead_letter(self, value, timeout=ANSWER_TIMEOUT):
        return self.readers["deadletter"].wait(
            lambda r: isinstance(r.msg, dict) and r.msg.get("value") == value,
            timeout=timeout, what="dead letters")[0]

    def sync_results(self):
        """A barrier: sends one read-only intent per results partition (keys
        chosen with murmur2 so that each partition gets one answer) and waits
        for them. Once they are read, every answer committed before them has
        been read too, so absences can be asserted."""
        n = self.readers["results"].partitions
        ids, want = [], {}
        i = 0
        while len(want) < n:
            key = f"barrier-{self.run_id}-{i}"
            p = wire.owner_partition(wire.routing_key(self.tenant, key), n)
            i += 1
            if p in want:
                continue
            iid = self.new_id()
            want[p] = iid
            ids.append(iid)
            self.send(wire.intent(iid, self.tenant, key, "conf.lookup", {"q": "barrier"}))
        for p, iid in want.items():
            rec = self.answer(iid)
            assert rec.partition == p, f"barrier answer for partition {p} landed on {rec.partition}"

    # ---- topics

    def create_topic(self, name, partitions, own=True, config=None):
        fs = self.admin.create_topics([NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})])
        fs[name].result(30)
        if own:
            self.extra_topics.append(name)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            md = self.admin.list_topics(name, timeout=10)
            t = md.topics.get(name)
            if t is not None and t.error is None and len(t.partitions) == partitions:
                return
            time.sleep(0.1)
        raise AssertionError(f"topic {name} not visible")

    def add_reader(self, name, topic):
        self.readers[name] = TopicReader(self.brokers, topic)
        return self.readers[name]

    # ---- teardown

    def close(self, delete_topics):
        for r in self.readers.values():
            r.close()
        if self.producer is not None:
            self.producer.flush(10)
        code = self.executor.stop()
        self.tools.close()
        if delete_topics:
            names = list(self.topics.values()) + self.extra_topics + [self.prefix + "meta"]
            try:
                for f in self.admin.delete_topics(names, operation_timeout=30).values():
                    f.result(60)
            except Exception as e:  # noqa: BLE001 - hygiene only
                print(f"conformance: could not delete topics {names}: {e}")
            try:
                if not self.own_group:
                    return code
                for f in self.admin.delete_consumer_groups([self.group], request_timeout=30).values():
                    f.result(60)
            except Exception as e:  # noqa: BLE001
                print(f"conformance: could not delete group {self.group}: {e}")
        return code
