"""The MCP example client (clients/python/examples/mcp_client.py) as a user
runs it: against the executor's embedded default (its broker, demo tools
and gateway, the default tenant's token in the data dir), from another
directory with the two variables the executor prints at start. It needs
no Kafka of its own."""

import os
import pathlib
import subprocess
import sys

import pytest

from conftest import free_port, wait_ready

EXAMPLE = pathlib.Path(__file__).resolve().parents[3] / "clients" / "python" / "examples" / "mcp_client.py"


@pytest.fixture(scope="module")
def embedded(tmp_path_factory):
    work = tmp_path_factory.mktemp("example")
    http, gw = f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"
    log = open(work / "executor.log", "wb")
    proc = subprocess.Popen(
        [os.environ["MCP_EXECUTOR"], "--data-dir", str(work / "data"), "--embedded-addr", f"127.0.0.1:{free_port()}",
         "--http-addr", http, "--reconciler-http-addr", f"127.0.0.1:{free_port()}", "--gateway-addr", gw],
        stdout=log, stderr=subprocess.STDOUT)
    wait_ready(proc, http)
    yield {"TOOLEXEC_URL": f"http://{gw}", "TOOLEXEC_TOKEN_FILE": str(work / "data" / "gateway.token")}
    proc.terminate()
    proc.wait(timeout=60)


def test_example_client_refunds_once_and_names_a_wrong_token(embedded, tmp_path):
    p = subprocess.run([sys.executable, str(EXAMPLE)], cwd=tmp_path, env={**os.environ, **embedded},
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("tools: ") and "demo.refund" in lines[0]
    first, again = lines[1], lines[2]
    assert first.startswith("first call: status succeeded") and first.endswith("was_replay False")
    assert again.startswith("same key again: status succeeded") and again.endswith("was_replay True")
    refund_id = first.split("refund_id ")[1].split(",")[0]
    assert refund_id.startswith("rf_") and f"refund_id {refund_id}," in again  # one refund
    assert lines[3].startswith("the replay says: Succeeded. Replay")
    # the gateway's 401 reaches the user in words, not as "Server returned an error response"
    assert lines[4] == ("wrong token: MCPError(-32001): Unauthorized (401): token unknown: "
                        "the embedded executor keeps it in <data-dir>/gateway.token"), lines[4]
