import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from harness import Harness  # noqa: E402

_failed = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.failed:
        _failed.append(item.nodeid)


@pytest.fixture(scope="session")
def h():
    binary = os.environ.get("CONFORMANCE_EXECUTOR")
    if not binary or not os.access(binary, os.X_OK):
        pytest.exit("CONFORMANCE_EXECUTOR must name the executor binary (run harness/conformance/run.sh)", 2)
    brokers = os.environ.get("KAFKA_BROKERS", "127.0.0.1:19092")
    workdir = os.environ.get("CONFORMANCE_WORKDIR") or tempfile.mkdtemp(prefix="conformance-")
    harness = Harness(binary, brokers, workdir)
    print(f"\nconformance: prefix {harness.prefix} group {harness.group} "
          f"executor log {harness.executor.log_path}", file=sys.stderr)
    yield harness
    keep = bool(_failed) or os.environ.get("CONFORMANCE_KEEP_TOPICS") == "1"
    code = harness.close(delete_topics=not keep)
    if keep:
        print(f"\nconformance: topics kept: {harness.prefix}*", file=sys.stderr)
    assert code == 0, f"executor exited with {code} after SIGTERM (log: {harness.executor.log_path})"
