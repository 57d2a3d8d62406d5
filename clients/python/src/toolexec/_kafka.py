"""The Kafka transport: intents produced to the owner partition of
``<prefix>intents`` and answers read ``read_committed`` from the reply topic
(docs/wire-format.md), with confluent-kafka (librdkafka) and msgpack.

Threads: one background thread (``toolexec-kafka``) owns the consumer: it
polls answers and hands each to the waiter of its ``intent_id``, serves the
producer's delivery reports, and refreshes the partition counts. Callers
only produce (thread-safe in librdkafka) and wait on their own waiter.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from . import kafka_config
from ._request import CallRequest, settles
from .errors import ConfigError, TransportError
from .result import Result
from .routing import owner_partition, routing_key

#: Seconds the background thread blocks in one consume; the delay before a
#: close() is noticed, not a latency (answers wake it at once).
_POLL_S = 0.1
#: Answers taken from librdkafka in one consume call.
_MAX_BATCH = 500
#: How often partition counts are read again: partitions added to the
#: reply topic are then read too, and intents go to the new owner (an
#: intent sent to the old one is forwarded by the executor, so this is an
#: optimisation for intents and a necessity for answers).
_METADATA_REFRESH_S = 30.0
#: Metadata and offset requests at connect.
DEFAULT_CONNECT_TIMEOUT = 30.0
#: Answers kept for one waiter that has not read them yet (pending answers
#: come at most one per delivery; a terminal one ends the wait).
_MAX_QUEUED_ANSWERS = 16
#: The first metadata request at connect is sent again in slices this long,
#: so that a broker that refuses the connection is noticed at once.
_CONNECT_SLICE_S = 0.5
#: How long no broker may be reachable (refused, not resolved) at connect
#: before connect() gives up, however long connect_timeout is. Why not at
#: once: a broker that is starting next to the client gets this long.
_UNREACHABLE_GRACE_S = 10.0
#: librdkafka errors that mean no broker could be reached at all.
_UNREACHABLE_CODES = frozenset({"_TRANSPORT", "_ALL_BROKERS_DOWN", "_RESOLVE"})
#: The Python logger that librdkafka's log lines go to once connected.
LOG = logging.getLogger("toolexec.kafka")


class _RdkafkaLog:
    """librdkafka's ``logger``: while the client connects, its lines are
    held back (a failed connect is one exception, and the last line held is
    its cause); afterwards they go to the Python logger ``toolexec.kafka``.
    Called on the threads that poll the clients."""

    def __init__(self) -> None:
        self.connecting = True
        self._held: deque[str] = deque(maxlen=8)

    def log(self, level: int, msg: str, *args: object) -> None:
        if self.connecting:
            self._held.append(msg % args if args else msg)
            return
        LOG.log(level, msg, *args)

    def last(self) -> str | None:
        """The cause in the last line held: what follows its ``]: ``."""
        if not self._held:
            return None
        line = self._held[-1]
        return line.rsplit("]: ", 1)[-1]


class Waiter(Protocol):
    """Receives what the background thread learns about one intent. Both
    methods are called on the background thread and must not block."""

    def on_answer(self, result: Result) -> None: ...

    def on_delivery_error(self, message: str) -> None: ...


class KafkaCore:
    """Producer, answer reader and routing; see the module doc."""

    def __init__(self, brokers: str | list[str], config: Mapping[str, object] | None,
                 prefix: str, reply_to: str | None, connect_timeout: float) -> None:
        try:
            import confluent_kafka
            import msgpack
        except ImportError as e:  # pragma: no cover - depends on the install
            raise ConfigError("the Kafka transport needs the [kafka] extra: pip install 'toolexec[kafka]'") from e
        self._ck: Any = confluent_kafka
        self._msgpack: Any = msgpack
        servers = brokers if isinstance(brokers, str) else ",".join(brokers)
        if not servers:
            raise ConfigError("no brokers given")
        self._props = kafka_config.check(config or {})
        self._servers = servers
        self.intents = prefix + "intents"
        self.results = prefix + "results"
        self.reply_to = reply_to or self.results
        self._timeout = connect_timeout
        self._lock = threading.Lock()
        self._waiters: dict[str, Waiter] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._producer: Any = None
        self._consumer: Any = None
        self._n_intents = 0
        self._reply_parts: set[int] = set()
        self._last_error: str | None = None
        self._undecodable = 0
        self._log = _RdkafkaLog()

    # ---- life cycle

    def connect(self) -> None:
        """Creates the clients, reads the partition counts and starts
        reading answers at the current end of every reply partition, so that
        every answer to an intent produced afterwards is seen. Blocking."""
        ck = self._ck
        # Warnings and errors only unless told otherwise: librdkafka's info
        # lines (telemetry, ...) would fill an agent's terminal.
        common = {"log_level": 4, **self._props, "bootstrap.servers": self._servers, "logger": self._log}
        try:
            self._producer = ck.Producer({"enable.idempotence": True, "acks": "all", "linger.ms": 2, **common})
            self._consumer = ck.Consumer({
                **common,
                "group.id": "toolexec-py-" + secrets.token_hex(8),  # assign() only: nothing is committed
                "enable.auto.commit": False,
                "isolation.level": "read_committed",  # never an answer of an aborted transaction
                "enable.partition.eof": False,
            })
        except ck.KafkaException as e:
            raise ConfigError(f"kafka client: {e}") from None
        self._reach_brokers()
        self._n_intents = len(self._partitions(self.intents, "is the executor running?"))
        parts = self._partitions(self.reply_to, "create it, or leave reply_to unset")
        start = []
        for p in sorted(parts):
            _, high = self._watermarks(p)
            start.append(ck.TopicPartition(self.reply_to, p, high))
        self._consumer.assign(start)
        self._reply_parts = set(parts)
        self._log.connecting = False
        self._thread = threading.Thread(target=self._run, name="toolexec-kafka", daemon=True)
        self._thread.start()

    def _reach_brokers(self) -> None:
        """Asks for the intents topic's metadata until a broker answers: up
        to connect_timeout, but no longer than _UNREACHABLE_GRACE_S while
        no broker can be reached at all. Raises TransportError."""
        start = time.monotonic()
        deadline = start + self._timeout
        while True:
            left = deadline - time.monotonic()
            try:
                self._consumer.list_topics(self.intents, timeout=max(0.01, min(_CONNECT_SLICE_S, left)))
                return
            except self._ck.KafkaException as e:
                # Polling serves the log lines into self._log (held), so the
                # error below can name their cause.
                self._consumer.poll(0)
                self._producer.poll(0)
                err = e.args[0] if e.args else None
                unreachable = getattr(err, "name", lambda: "")() in _UNREACHABLE_CODES
                now = time.monotonic()
                if now >= deadline or (unreachable and now - start >= _UNREACHABLE_GRACE_S):
                    raise TransportError(self._unreachable(e, now - start), sent=False) from None

    def _unreachable(self, e: Exception, waited: float) -> str:
        cause = self._log.last() or str(e)
        return (f"kafka: no broker at {self._servers} answered within {waited:.0f}s ({cause}): is the executor "
                f"running, with this address as its --embedded-addr (default 127.0.0.1:9092) or among its "
                f"--brokers? Give Client.kafka() that address; nothing was sent")

    def close(self, timeout: float = 10.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
        if self._producer is not None:
            self._producer.flush(timeout)
            self._producer = None  # librdkafka destroys it (and its connections) when collected
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _partitions(self, topic: str, hint: str) -> list[int]:
        try:
            md = self._consumer.list_topics(topic, timeout=self._timeout)
        except self._ck.KafkaException as e:
            raise TransportError(f"kafka: metadata of {topic} from {self._servers}: {e}", sent=False) from None
        t = md.topics.get(topic)
        if t is None or t.error is not None or not t.partitions:
            why = t.error if t is not None and t.error is not None else "no partitions"
            raise ConfigError(f"kafka: topic {topic} is not usable ({why}); {hint}")
        return list(t.partitions)

    def _watermarks(self, p: int) -> tuple[int, int]:
        try:
            low, high = self._consumer.get_watermark_offsets(
                self._ck.TopicPartition(self.reply_to, p), timeout=self._timeout)
        except self._ck.KafkaException as e:
            raise TransportError(f"kafka: end offset of {self.reply_to}[{p}]: {e}", sent=False) from None
        return low, high

    # ---- calls

    def send(self, req: CallRequest, waiter: Waiter) -> None:
        """Registers waiter for req's answers and produces the intent. The
        waiter must be removed with forget(req.intent_id)."""
        if self._producer is None or self._stop.is_set():
            raise TransportError("kafka: the client is closed (or never connected)", sent=False)
        with self._lock:
            if req.intent_id in self._waiters:
                raise TransportError(f"intent id {req.intent_id} is already waiting", sent=False)
            self._waiters[req.intent_id] = waiter
        rk = routing_key(req.tenant or "default", req.key)
        value = self._msgpack.packb(self._intent(req), use_bin_type=True)
        headers = [("traceparent", req.traceparent.encode())] if req.traceparent else None
        if headers and req.tracestate:
            headers.append(("tracestate", req.tracestate.encode()))

        def delivered(err: Any, _msg: Any) -> None:
            if err is not None:
                waiter.on_delivery_error(f"intent not delivered: {err}")

        try:
            self._producer.produce(self.intents, key=rk.encode(), value=value, headers=headers,
                                   partition=owner_partition(rk, self._n_intents), on_delivery=delivered)
        except (BufferError, self._ck.KafkaException) as e:
            self.forget(req.intent_id)
            raise TransportError(f"kafka: intent not queued: {e}", sent=False) from None

    def forget(self, intent_id: str) -> None:
        with self._lock:
            self._waiters.pop(intent_id, None)

    def _intent(self, req: CallRequest) -> dict[str, Any]:
        m: dict[str, Any] = {"v": 1, "type": req.type, "id": req.intent_id, "key": req.key,
                             "tenant": req.tenant or "default", "tool": req.tool}
        if req.type == "call":
            m["args"] = req.args
        if self.reply_to != self.results:
            m["reply_to"] = self.reply_to
        return m

    def last_error(self) -> str | None:
        return self._last_error

    # ---- the background thread

    def _run(self) -> None:
        next_refresh = time.monotonic() + _METADATA_REFRESH_S
        while not self._stop.is_set():
            try:
                msgs = self._consumer.consume(num_messages=_MAX_BATCH, timeout=_POLL_S)
            except Exception as e:  # noqa: BLE001 - keep serving; surfaced in NoAnswer messages
                self._last_error = f"consume: {e}"
                msgs = []
            for m in msgs:
                self._handle(m)
            self._producer.poll(0)
            if time.monotonic() >= next_refresh:
                self._refresh()
                next_refresh = time.monotonic() + _METADATA_REFRESH_S

    def _handle(self, m: Any) -> None:
        if m.error() is not None:
            self._last_error = str(m.error())
            return
        try:
            doc = self._msgpack.unpackb(m.value(), raw=False, strict_map_key=False)
            res = Result.from_wire(doc)
        except Exception:  # noqa: BLE001 - not an answer of ours; counted
            self._undecodable += 1
            return
        with self._lock:
            w = self._waiters.get(res.intent_id or "")
        if w is not None:
            w.on_answer(res)

    def _refresh(self) -> None:
        try:
            self._n_intents = max(self._n_intents, len(self._partitions(self.intents, "")))
            parts = set(self._partitions(self.reply_to, ""))
        except Exception as e:  # noqa: BLE001 - the next refresh tries again
            self._last_error = f"metadata: {e}"
            return
        new = parts - self._reply_parts
        if new:
            # A partition that appeared since the last look holds only
            # answers newer than it: read it from its beginning.
            self._consumer.incremental_assign(
                [self._ck.TopicPartition(self.reply_to, p, self._ck.OFFSET_BEGINNING) for p in sorted(new)])
            self._reply_parts |= new


class QueueWaiter:
    """A waiter for a thread: answers wait in a bounded list under a
    condition variable."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._answers: list[Result] = []
        self._error: str | None = None

    def on_answer(self, result: Result) -> None:
        with self._cond:
            if len(self._answers) >= _MAX_QUEUED_ANSWERS:
                self._answers.pop(0)  # an older pending answer adds nothing
            self._answers.append(result)
            self._cond.notify_all()

    def on_delivery_error(self, message: str) -> None:
        with self._cond:
            self._error = message
            self._cond.notify_all()

    def wait(self, deadline: float) -> Result | None:
        """Returns the terminal answer (or one that says a person must
        approve first), or the last pending one (or None)
        when the deadline passes; raises TransportError when the intent was
        not delivered."""
        last: Result | None = None
        with self._cond:
            while True:
                while self._answers:
                    r = self._answers.pop(0)
                    if settles(r):
                        return r
                    last = r
                if self._error is not None:
                    raise TransportError(f"kafka: {self._error}", sent=False)
                left = deadline - time.monotonic()
                if left <= 0:
                    return last
                self._cond.wait(left)


class CallbackWaiter:
    """A waiter that forwards to callables (the async client wraps them
    with loop.call_soon_threadsafe)."""

    def __init__(self, on_answer: Callable[[Result], None], on_error: Callable[[str], None]) -> None:
        self.on_answer = on_answer
        self.on_delivery_error = on_error
