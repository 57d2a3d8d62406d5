"""Shared fixtures. The end-to-end ones start a ledger tool server and
executors (see e2e.py); they are created on first use, so the unit tests
need neither Go nor Kafka."""

import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import e2e  # noqa: E402

ROOT = e2e.ROOT
VECTORS = os.path.join(ROOT, "wire", "testdata", "client-vectors.json")

BACKENDS = ["embedded", "broker"]
TRANSPORTS = ["kafka", "http"]
COMBOS = [(b, t) for b in BACKENDS for t in TRANSPORTS]


class Env:
    """The session's shared processes, started on first use."""

    def __init__(self):
        base = os.environ.get("TOOLEXEC_E2E_DIR")
        if base:
            os.makedirs(base, exist_ok=True)
        self.workdir = tempfile.mkdtemp(prefix="toolexec-py-e2e-", dir=base)
        self.ledger = None
        self.tools_file = None
        self.binary = None
        self.gateway = None
        self.executors = {}
        self.failed = False

    def setup_common(self):
        if self.ledger is None:
            self.ledger = e2e.Ledger()
            self.binary = e2e.executor_binary(self.workdir)
            self.gateway = e2e.has_gateway(self.binary)
            self.tools_file = os.path.join(self.workdir, "tools.yaml")
            with open(self.tools_file, "w") as f:
                f.write(e2e.TOOLS_YAML.format(base=self.ledger.url, closed=e2e.free_port(),
                                              description=e2e.DESCRIPTION if self.gateway else ""))

    def executor(self, backend):
        """backend: "embedded", "broker" (KAFKA_BROKERS), or "demo" (embedded,
        with the built-in demo tools, for the README and the example)."""
        self.setup_common()
        if backend not in self.executors:
            brokers = None
            if backend == "broker":
                brokers = os.environ.get("KAFKA_BROKERS")
                if not brokers:
                    pytest.skip("no KAFKA_BROKERS: the real-broker backend is not run")
            wd = os.path.join(self.workdir, backend)
            os.makedirs(wd)
            tools = None if backend == "demo" else self.tools_file
            ex = e2e.Executor(self.binary, wd, tools, brokers, self.gateway)
            self.executors[backend] = ex
            ex.wait_ready()
            warm_up(ex, "demo.echo" if backend == "demo" else "py.lookup")
        return self.executors[backend]

    def require_gateway(self):
        self.setup_common()
        if not self.gateway:
            if os.environ.get("TOOLEXEC_REQUIRE_GATEWAY") == "1":
                pytest.fail("the executor has no embedded gateway (--gateway-addr), but the tree has cmd/gateway")
            pytest.skip("the executor of this tree has no gateway: the HTTP transport is not run end to end")

    def close(self):
        for ex in self.executors.values():
            code = ex.stop()
            if code not in (0, None):
                print(f"e2e: executor exited {code}; log {ex.log_path}")
                self.failed = True
            elif ex.prefix != "tool.":
                ex.delete_topics()
        if self.ledger is not None:
            self.ledger.close()
        if not self.failed and os.environ.get("TOOLEXEC_KEEP") != "1":
            shutil.rmtree(self.workdir, ignore_errors=True)
        else:
            print(f"e2e: logs kept in {self.workdir}")


# A first call on a fresh broker waits for the executor's group to settle
# and for Kafka to create its transaction log; the tests' waits are for
# calls, not for that, so one call with a long wait comes first.
WARM_UP_WAIT_S = 90


def warm_up(ex, tool):
    import toolexec
    with toolexec.Client.kafka(ex.brokers, topic_prefix=ex.prefix) as c:
        c.call(tool, key="warm-up", args={"q": "warm-up"}, wait=WARM_UP_WAIT_S)


@pytest.fixture(scope="session")
def env(request):
    e = Env()
    yield e
    e.failed = e.failed or request.session.testsfailed > 0
    e.close()


@pytest.fixture(scope="session")
def ledger(env):
    env.setup_common()
    return env.ledger


class Target:
    """One backend and one transport: what a test talks to."""

    def __init__(self, env, backend, transport):
        self.env, self.backend, self.transport = env, backend, transport
        self.executor = env.executor(backend)
        if transport == "http":
            env.require_gateway()

    def client(self):
        import toolexec
        ex = self.executor
        if self.transport == "http":
            return toolexec.Client.http(ex.gateway_url, ex.token)
        return toolexec.Client.kafka(ex.brokers, topic_prefix=ex.prefix)

    def async_client(self):
        import toolexec
        ex = self.executor
        if self.transport == "http":
            return toolexec.AsyncClient.http(ex.gateway_url, ex.token)
        return toolexec.AsyncClient.kafka(ex.brokers, topic_prefix=ex.prefix)

    def agent_env(self):
        """Environment for an agent subprocess to build the same client."""
        ex = self.executor
        e = {"TOOLEXEC_TRANSPORT": self.transport, "TOOLEXEC_BROKERS": ex.brokers,
             "TOOLEXEC_TOPIC_PREFIX": ex.prefix, "LEDGER_URL": self.env.ledger.url}
        if self.transport == "http":
            e.update({"TOOLEXEC_URL": ex.gateway_url, "TOOLEXEC_TOKEN": ex.token})
        return e

    def __repr__(self):
        return f"{self.backend}-{self.transport}"


@pytest.fixture(params=COMBOS, ids=[f"{b}-{t}" for b, t in COMBOS])
def target(request, env):
    return Target(env, *request.param)


@pytest.fixture(scope="session")
def _clients(env):
    cache = {}
    yield cache
    for c in cache.values():
        c.close()


@pytest.fixture
def client(target, _clients):
    """One client per backend and transport, shared by the session."""
    k = (target.backend, target.transport)
    if k not in _clients:
        _clients[k] = target.client()
    return _clients[k]
