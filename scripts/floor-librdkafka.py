#!/usr/bin/env python3
"""Kafka's one-caller floor measured with librdkafka (confluent-kafka), by hand.

The bench (harness/cmd/bench, scenario 8) measures the same floor with franz-go in
every run; this script is the cross-check against another client, the one
the issue's first figures were taken with. One caller, one round trip at a
time, on a topic of its own:

  produce   a produce (acks=all) and its read_committed consume
  txn       one transaction (begin, produce, commit) and its read_committed
            consume

each with the consumer's fetch.wait.max.ms at 500 (librdkafka's default)
and at 10. Prints p50/p90/p99 in ms.

  python3 -m venv /tmp/v && /tmp/v/bin/pip install confluent-kafka
  /tmp/v/bin/python scripts/floor-librdkafka.py --brokers 127.0.0.1:19092 [--n 200]
"""

import argparse
import math
import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic


def quantile(sorted_ms, q):
    i = max(math.ceil(q * len(sorted_ms)) - 1, 0)
    return sorted_ms[min(i, len(sorted_ms) - 1)]


def consumer(brokers, topic, wait_ms):
    c = Consumer({"bootstrap.servers": brokers, "group.id": "floor-" + uuid.uuid4().hex,
                  "isolation.level": "read_committed", "enable.auto.commit": False,
                  "fetch.wait.max.ms": wait_ms, "fetch.min.bytes": 1})
    c.assign([TopicPartition(topic, 0, -1)])  # from the end
    c.poll(1.0)
    return c


def await_value(c, want, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = c.poll(0.1)
        if m is not None and m.error() is None and m.value() == want:
            return time.perf_counter()
    raise TimeoutError(want)


def measure(name, n, warm, one):
    lat = []
    for i in range(-warm, n):
        start = time.perf_counter()
        end = one(i)
        if i >= 0:
            lat.append((end - start) * 1000)
    lat.sort()
    print(f"{name:32s} p50 {quantile(lat, .5):6.1f}  p90 {quantile(lat, .9):6.1f}  p99 {quantile(lat, .99):6.1f} ms")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brokers", required=True)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--warm", type=int, default=20)
    a = ap.parse_args()
    topic = "floor-librdkafka-" + uuid.uuid4().hex[:8]
    adm = AdminClient({"bootstrap.servers": a.brokers})
    adm.create_topics([NewTopic(topic, 1, 1)])[topic].result()
    try:
        prod = Producer({"bootstrap.servers": a.brokers, "acks": "all", "linger.ms": 0, "enable.idempotence": True})
        txn = Producer({"bootstrap.servers": a.brokers, "linger.ms": 0, "transactional.id": "floor-" + uuid.uuid4().hex})
        txn.init_transactions(30)
        for wait in (500, 10):
            c = consumer(a.brokers, topic, wait)

            def produce(i, tag=f"p{wait}"):
                v = f"{tag}-{i}".encode()
                prod.produce(topic, v, partition=0)
                prod.flush(30)
                return await_value(c, v)

            def transaction(i, tag=f"t{wait}"):
                v = f"{tag}-{i}".encode()
                txn.begin_transaction()
                txn.produce(topic, v, partition=0)
                txn.commit_transaction(30)
                return await_value(c, v)

            measure(f"produce -> consume, wait {wait}", a.n, a.warm, produce)
            measure(f"transaction -> consume, wait {wait}", a.n, a.warm, transaction)
            c.close()
    finally:
        adm.delete_topics([topic])


if __name__ == "__main__":
    main()
