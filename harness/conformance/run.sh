#!/usr/bin/env bash
# Cross-language conformance test of wire contract v1 (docs/wire-format.md):
# Python (confluent-kafka + msgpack) against the executor and a real Kafka.
#
#   KAFKA_BROKERS=127.0.0.1:19092 harness/conformance/run.sh [pytest args...]
#
# Needs a running broker (eval "$(deploy/kafka/start)"), Go and python3.
# Environment:
#   KAFKA_BROKERS            seed brokers (default 127.0.0.1:19092)
#   CONFORMANCE_KEEP_TOPICS  1 = keep the run's topics (they are kept anyway on failure)
#   CONFORMANCE_ANSWER_TIMEOUT  seconds to wait for one answer (default 30)
#   CONFORMANCE_KAFKA_CONFIG    client properties of the harness (SASL_SSL: an admin's)
#   CONFORMANCE_EXECUTOR_KAFKA_CONFIG  the executor's --kafka-config (default the harness's)
#   CONFORMANCE_PREFIX_BASE, CONFORMANCE_GROUP  topic prefix start and group (the
#                            executor role's under ACLs: tool.conformance-, tool-executor)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="$HERE/.venv"
export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:19092}"

say() { printf 'conformance: %s\n' "$*" >&2; }

deps_ok() { "$1" -c 'import confluent_kafka, msgpack, pytest' >/dev/null 2>&1; }
# Pinned: SCRAM against Kafka 4 needs librdkafka 2.6.1 or newer (the wheel
# bundles its own; 2.16.1 tested).
CONFLUENT_KAFKA_VERSION=2.16.1

# --- Python: a venv with confluent-kafka, msgpack and pytest (idempotent),
# else the Debian packages.
PY=""
if [[ -x "$VENV/bin/python" ]] && deps_ok "$VENV/bin/python"; then
  PY="$VENV/bin/python"
else
  say "creating $VENV"
  rm -rf "$VENV"
  if python3 -m venv "$VENV" >&2 &&
     "$VENV/bin/python" -m pip install -q --disable-pip-version-check "confluent-kafka==$CONFLUENT_KAFKA_VERSION" msgpack pytest >&2 &&
     deps_ok "$VENV/bin/python"; then
    PY="$VENV/bin/python"
  else
    say "venv or pip failed; falling back to Debian packages"
    rm -rf "$VENV"
    if ! deps_ok /usr/bin/python3; then
      SUDO=""
      [[ $(id -u) -ne 0 ]] && SUDO="sudo -n"
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
      $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        python3-confluent-kafka python3-msgpack python3-pytest >&2
    fi
    deps_ok /usr/bin/python3 || { say "cannot get confluent-kafka, msgpack and pytest"; exit 2; }
    PY=/usr/bin/python3
  fi
fi

# --- the broker must answer.
"$PY" - "$HERE" <<'PYEOF' || { say "no Kafka at $KAFKA_BROKERS (or it refused CONFORMANCE_KAFKA_CONFIG); start one with: eval \"\$(deploy/kafka/start)\""; exit 2; }
import os, sys
sys.path.insert(0, sys.argv[1])
import confluent_kafka
from confluent_kafka.admin import AdminClient
from harness import KAFKA_CONF, client_conf
if KAFKA_CONF.get("sasl.mechanism", KAFKA_CONF.get("sasl.mechanisms", "")).upper().startswith("SCRAM"):
    v = tuple(int(x) for x in confluent_kafka.libversion()[0].split(".")[:3])
    if v < (2, 6, 1):
        print(f"librdkafka {confluent_kafka.libversion()[0]} cannot do SCRAM against Kafka 4 (needs 2.6.1+)", file=sys.stderr); sys.exit(1)
try:
    AdminClient(client_conf(os.environ["KAFKA_BROKERS"])).list_topics(timeout=10)
except Exception as e:
    print(e, file=sys.stderr); sys.exit(1)
PYEOF

# --- the executor binary.
WORK="$(mktemp -d "${TMPDIR:-/tmp}/conformance.XXXXXX")"
say "building the executor into $WORK"
(cd "$ROOT" && go build -o "$WORK/executor" ./cmd/executor)

# --- the tests: the session fixture starts the tool server and the executor
# (it needs the tool server's port), waits for /readyz, and SIGTERMs the
# executor at the end.
export CONFORMANCE_EXECUTOR="$WORK/executor" CONFORMANCE_WORKDIR="$WORK"
export PYTHONDONTWRITEBYTECODE=1 PATH="$(dirname "$PY"):$PATH"
set +e
(cd "$HERE" && "$PY" -m pytest -p no:cacheprovider -rfEs "$@" test_conformance.py)
rc=$?
set -e
if [[ $rc -ne 0 ]]; then
  say "FAILED (exit $rc); executor log $WORK/executor.log:"
  if [[ -f "$WORK/executor.log" ]]; then
    echo "----- executor log -----" >&2
    tail -n 2000 "$WORK/executor.log" >&2
    echo "----- end of executor log -----" >&2
  fi
  exit $rc
fi
rm -rf "$WORK"
