"""The documents' code, run as written against the executor with its
built-in demo tools (the embedded default): the README's "From Python"
block and examples/langgraph_refund.py. Only the gateway's address and the
token file's path differ from the defaults (the tests pick free ports).

demo.refund numbers its refunds (rf_1, rf_2, ...) in the executor process:
a refund made with a fresh key before and after a run tells how many
refunds the run made."""

import os
import re
import subprocess
import sys
import uuid

import pytest

from conftest import ROOT, Target

HERE = os.path.dirname(__file__)
EXAMPLE = os.path.join(HERE, "..", "examples", "langgraph_refund.py")
RUN_TIMEOUT_S = 180


def refund_number(target):
    c = target.client()
    try:
        r = c.call("demo.refund", key="probe-" + uuid.uuid4().hex, args={"amount": 1}, wait=30)
    finally:
        c.close()
    return int(r.result["refund_id"].removeprefix("rf_"))


def readme_block():
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    m = re.search(r"<!-- python:readme -->\s*```python\n(.*?)```", text, re.S)
    assert m, "README.md has no <!-- python:readme --> block"
    return m.group(1)


def test_the_readme_example_runs_as_written(env, tmp_path):
    t = Target(env, "demo", "http")
    code = readme_block().replace("http://127.0.0.1:8080", t.executor.gateway_url)
    os.makedirs(tmp_path / "data")
    with open(tmp_path / "data" / "gateway.token", "w") as f:
        f.write(t.executor.token + "\n")
    before = refund_number(t)
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       timeout=RUN_TIMEOUT_S)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith("succeeded {") and lines[0].endswith(" False")
    assert lines[1] == lines[0][: -len("False")] + "True"
    assert refund_number(t) - before == 2  # one refund by the block, one by the probe


@pytest.mark.parametrize("transport", ["http", "kafka"])
def test_the_langgraph_example_runs_as_written(env, transport):
    t = Target(env, "demo", transport)
    e = dict(os.environ)
    if transport == "http":
        e.update({"TOOLEXEC_URL": t.executor.gateway_url,
                  "TOOLEXEC_TOKEN_FILE": os.path.join(t.executor.data_dir, "gateway.token")})
    else:
        e.update({"TOOLEXEC_BROKERS": t.executor.brokers, "TOOLEXEC_TOPIC_PREFIX": t.executor.prefix})
    before = refund_number(t)
    p = subprocess.run([sys.executable, EXAMPLE], env=e, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "was_replay=False" in p.stdout and "was_replay=True" in p.stdout
    assert "the node ran twice, the refund once" in p.stdout
    assert refund_number(t) - before == 2  # one refund by the example, one by the probe
