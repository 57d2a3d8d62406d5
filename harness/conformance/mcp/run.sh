#!/usr/bin/env bash
# MCP conformance of the gateway: the official Python `mcp` package (PyPI,
# pinned below) speaks MCP Streamable HTTP to the gateway embedded in the
# executor, over a real Kafka (docs/gateway.md, "MCP"); and the MCP example
# client (clients/python/examples/mcp_client.py) against the executor's
# embedded default (test_example.py, no Kafka of its own).
#
#   KAFKA_BROKERS=127.0.0.1:19092 harness/conformance/mcp/run.sh [pytest args...]
#   MCP_EMBEDDED=1 harness/conformance/mcp/run.sh      the executor on its embedded broker
#
# Needs a running broker (eval "$(deploy/kafka/start)") unless MCP_EMBEDDED=1,
# Go and python3 with venv. Creates harness/conformance/mcp/.venv (git-ignored) once.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../../.." && pwd)"
VENV="$HERE/.venv"
[[ "${MCP_EMBEDDED:-}" == 1 ]] || export KAFKA_BROKERS="${KAFKA_BROKERS:-127.0.0.1:19092}"
# The versions this suite was tested with. mcp 2.x is the current line of
# the official SDK (it brings httpx2 and anyio).
MCP_VERSION="2.3.0"
PYTEST_VERSION="9.2.0"

say() { printf 'mcp conformance: %s\n' "$*" >&2; }

deps_ok() { "$1" -c "import mcp, pytest, sys; from importlib.metadata import version; sys.exit(version('mcp') != '$MCP_VERSION')" >/dev/null 2>&1; }

if ! { [[ -x "$VENV/bin/python" ]] && deps_ok "$VENV/bin/python"; }; then
  say "creating $VENV with mcp==$MCP_VERSION"
  rm -rf "$VENV"
  python3 -m venv "$VENV" >&2
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "mcp==$MCP_VERSION" "pytest==$PYTEST_VERSION" >&2
  deps_ok "$VENV/bin/python" || { say "cannot install mcp==$MCP_VERSION"; exit 2; }
fi
PY="$VENV/bin/python"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-conformance.XXXXXX")"
say "building the executor and the reconciler into $WORK"
(cd "$ROOT" && go build -o "$WORK/executor" ./cmd/executor && go build -o "$WORK/reconciler" ./cmd/reconciler)

export MCP_EXECUTOR="$WORK/executor" MCP_RECONCILER="$WORK/reconciler" MCP_WORKDIR="$WORK" PYTHONDONTWRITEBYTECODE=1
set +e
# test_example.py starts the embedded default itself: one run of it is enough.
tests=(test_mcp.py test_example.py)
[[ "${MCP_EMBEDDED:-}" == 1 ]] && tests=(test_mcp.py)
(cd "$HERE" && "$PY" -m pytest -p no:cacheprovider -rfEs "$@" "${tests[@]}")
rc=$?
set -e
if [[ $rc -ne 0 ]]; then
  say "FAILED (exit $rc); executor log $WORK/executor.log:"
  [[ -f "$WORK/executor.log" ]] && tail -n 300 "$WORK/executor.log" >&2
  exit $rc
fi
rm -rf "$WORK"
