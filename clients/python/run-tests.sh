#!/usr/bin/env bash
# Tests of the Python client (clients/python, importable as toolexec):
# mypy --strict, the unit tests, and the end-to-end tests against executors
# that the tests start themselves (on the embedded broker, and on the real
# broker at $KAFKA_BROKERS when it is set), through both transports, with
# LangGraph.
#
#   clients/python/run-tests.sh [pytest args...]          the CI form
#   TOOLEXEC_PY_LONG=1 clients/python/run-tests.sh        also the slow cases,
#       python -m build, and pip install ./clients/python in a fresh venv
#
# Environment:
#   KAFKA_BROKERS        a real broker (eval "$(deploy/kafka/start)"); without it the
#                        real-broker cases are skipped
#   TOOLEXEC_EXECUTOR    an executor binary (default: built here)
#   TOOLEXEC_KEEP=1      keep the executors' logs and data
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
VENV="$HERE/.venv"
PY="$VENV/bin/python"
say() { printf 'clients/python: %s\n' "$*" >&2; }

# Pinned: what was tested (README "Versions tested"). The constraints file
# pins every transitive dependency too.
REQS=(httpx==0.28.1 confluent-kafka==2.16.1 msgpack==1.2.4 langgraph==1.2.22
      langgraph-checkpoint-sqlite==3.1.2 pytest==9.2.0 mypy==2.4.1 hatchling==1.33.0
      opentelemetry-api==1.45.2 opentelemetry-sdk==1.45.2)

deps_ok() {
  "$PY" - "${REQS[@]}" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
for req in sys.argv[1:]:
    name, want = req.split("==")
    if version(name) != want:
        sys.exit(1)
EOF
}

start=$(date +%s)
if [[ ! -x "$PY" ]] || ! deps_ok; then
  say "creating $VENV (${REQS[*]})"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  # --no-compile: only what is imported gets compiled (on first import)
  "$PY" -m pip install -q --no-compile --disable-pip-version-check -c "$HERE/ci-constraints.txt" "${REQS[@]}"
fi
# The package itself, as a user installs it (not editable): the tests import
# what pip installed.
"$PY" -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall "$HERE"
say "venv ready in $(( $(date +%s) - start ))s"

say "mypy --strict"
(cd "$HERE" && "$VENV/bin/mypy" --strict src/toolexec)

WORK="$(mktemp -d "${TMPDIR:-/tmp}/toolexec-py.XXXXXX")"
export TOOLEXEC_E2E_DIR="$WORK/e2e"
if [[ -z "${TOOLEXEC_EXECUTOR:-}" ]]; then
  say "building the executor"
  (cd "$ROOT" && go build -o "$WORK/executor" ./cmd/executor)
  export TOOLEXEC_EXECUTOR="$WORK/executor"
fi
# A tree with the gateway must run the HTTP transport end to end.
if [[ -d "$ROOT/cmd/gateway" ]]; then
  export TOOLEXEC_REQUIRE_GATEWAY=1
fi
export TOOLEXEC_LANGGRAPH_REPORT="$WORK/langgraph.jsonl"

set +e
(cd "$HERE" && "$PY" -m pytest -p no:cacheprovider -rfE "$@" tests)
rc=$?
set -e

if [[ -s "$TOOLEXEC_LANGGRAPH_REPORT" ]]; then
  say "LangGraph scenarios (effects counted by the ledger tool server):"
  "$PY" - "$TOOLEXEC_LANGGRAPH_REPORT" <<'EOF' >&2
import json, sys
from importlib.metadata import version
print(f"  langgraph {version('langgraph')}, confluent-kafka {version('confluent-kafka')}")
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"  {r['target']:16} {r['scenario']:22} effects={r['effects']} was_replay={r['was_replay']}")
EOF
fi
if [[ $rc -ne 0 ]]; then
  for log in "$WORK"/e2e/*/*/executor.log; do
    [[ -f "$log" ]] || continue
    echo "----- $log (last 80 lines) -----" >&2
    tail -n 80 "$log" >&2
  done
  say "FAILED (exit $rc); logs kept in $WORK"
  exit $rc
fi

if [[ "${TOOLEXEC_PY_LONG:-}" == "1" ]]; then
  say "python -m build, and pip install ./clients/python in a fresh venv"
  "$VENV/bin/pip" install -q -c "$HERE/ci-constraints.txt" build
  (cd "$HERE" && "$PY" -m build --outdir "$WORK/dist" >"$WORK/build.log" 2>&1) || { cat "$WORK/build.log" >&2; exit 1; }
  ls "$WORK/dist"/toolexec-*.whl >&2
  python3 -m venv "$WORK/fresh"
  "$WORK/fresh/bin/pip" install -q "$HERE[kafka,langgraph]"
  "$WORK/fresh/bin/python" -c 'import toolexec, confluent_kafka, langgraph; print("fresh venv: toolexec", toolexec.__version__)' >&2
fi
rm -rf "$WORK"
say "passed in $(( $(date +%s) - start ))s"
