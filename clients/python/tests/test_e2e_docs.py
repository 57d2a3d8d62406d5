"""The documents' code, run as written against the executor with its
built-in demo tools (the embedded default): the README's "From Python"
block and examples/langgraph_refund.py. The block runs in a directory of
its own, not the executor's, with the environment that the executor's
start banner exports (TOOLEXEC_URL, TOOLEXEC_TOKEN_FILE), as a newcomer
pastes it.

The executor's calls_total counter of demo.refund, read before and after a
run, tells how many refunds the run made."""

import os
import re
import subprocess
import sys
import urllib.request

import pytest

from conftest import ROOT, Target

HERE = os.path.dirname(__file__)
EXAMPLE = os.path.join(HERE, "..", "examples", "langgraph_refund.py")
RUN_TIMEOUT_S = 180
REFUNDS = re.compile(r'^toolexec_executor_calls_total\{outcome="succeeded",tool="demo.refund"\} (\d+)$', re.M)


def refunds(target):
    """demo.refund's calls that succeeded, from the executor's /metrics."""
    with urllib.request.urlopen(f"http://{target.executor.http}/metrics", timeout=10) as r:
        m = REFUNDS.search(r.read().decode())
    return int(m.group(1)) if m else 0


def banner_env(target):
    """The environment after the two export lines of the start banner."""
    e = dict(os.environ)
    e.pop("TOOLEXEC_TOKEN", None)
    e.update({"TOOLEXEC_URL": target.executor.gateway_url,
              "TOOLEXEC_TOKEN_FILE": os.path.join(target.executor.data_dir, "gateway.token")})
    return e


def readme_block():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    m = re.search(r"<!-- python:readme -->\s*```python\n(.*?)```", text, re.S)
    assert m, "README.md has no <!-- python:readme --> block"
    return m.group(1)


def test_the_readme_example_runs_as_written(env, tmp_path):
    t = Target(env, "demo", "http")
    before = refunds(t)
    p = subprocess.run([sys.executable, "-c", readme_block()], cwd=tmp_path, env=banner_env(t),
                       capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("succeeded {") and lines[0].endswith(" False")
    assert lines[1] == lines[0][: -len("False")] + "True"
    assert re.search(r"'refund_id': 'rf_[0-9a-f]{10}'", lines[0]), lines[0]
    assert refunds(t) - before == 1  # the retry was a replay


@pytest.mark.parametrize("transport", ["http", "kafka"])
def test_the_langgraph_example_runs_as_written(env, transport):
    t = Target(env, "demo", transport)
    e = banner_env(t)
    if transport == "kafka":
        e.update({"TOOLEXEC_BROKERS": t.executor.brokers, "TOOLEXEC_TOPIC_PREFIX": t.executor.prefix})
    before = refunds(t)
    p = subprocess.run([sys.executable, EXAMPLE], env=e, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "was_replay=False" in p.stdout and "was_replay=True" in p.stdout
    assert "the node ran twice, the refund once" in p.stdout
    assert refunds(t) - before == 1
