"""How an agent subprocess of the tests builds its client: from the
environment that the test passes (conftest.Target.agent_env)."""

import os

import toolexec


def make_client() -> toolexec.Client:
    if os.environ["TOOLEXEC_TRANSPORT"] == "http":
        return toolexec.Client.http(os.environ["TOOLEXEC_URL"], os.environ["TOOLEXEC_TOKEN"])
    return toolexec.Client.kafka(os.environ["TOOLEXEC_BROKERS"], topic_prefix=os.environ["TOOLEXEC_TOPIC_PREFIX"])
