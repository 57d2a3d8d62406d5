"""toolexec under a real framework: LangGraph (pinned in run-tests.sh),
with its in-memory and SQLite checkpointers, against the executor on both
backends and through both transports.

1. Interrupt and resume: the node body runs again on every resume, and so
   does its tool call; the ledger shows one effect, the second pass sees
   was_replay.
2. A crash between the tool call and the checkpoint: the agent process is
   SIGKILLed after the intent was sent (and the tool reached) but before the
   node's checkpoint was written; a new process resumes the thread; the tool
   was called once in total and the resumed node gets the original answer.
"""

import json
import os
import signal
import subprocess
import sys
import uuid

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import lg_agent
from test_e2e_calls import slow_on_the_broker

HERE = os.path.dirname(__file__)
AGENT_TIMEOUT_S = 180


def test_interrupt_and_resume_re_run_the_node_but_not_the_tool(target, client, ledger):
    passes = []
    graph = lg_agent.build(client, "py.refund", InMemorySaver(), passes.append)
    cfg = {"configurable": {"thread_id": f"t-{uuid.uuid4().hex[:8]}"}}

    out = graph.invoke({"order_id": "o-1", "amount": 30}, cfg)
    assert "approve" in out["__interrupt__"][0].value and passes == []
    key = graph.get_state(cfg).values["refund_idempotency_key"]

    out = graph.invoke(Command(resume=True), cfg)  # approved: the tool runs
    assert out["__interrupt__"][0].value["refund_id"] == passes[0].result["refund_id"]
    out = graph.invoke(Command(resume="thanks"), cfg)  # the node body runs again from the top

    assert [p.was_replay for p in passes] == [False, True]
    assert passes[1].result == passes[0].result and passes[1].original_intent_id == passes[0].intent_id
    assert {p.key for p in passes} == {key}
    assert out["refund"] == passes[0].result and out["note"] == "thanks"
    assert ledger.effects_of(key) == 1
    report(target, "interrupt/resume", key, ledger.effects_of(key), [p.was_replay for p in passes])


@pytest.mark.parametrize("kill", ["after_send", "after_answer"])
def test_a_crash_between_the_tool_call_and_the_checkpoint_calls_the_tool_once(target, ledger, tmp_path, kill):
    if kill == "after_answer":
        slow_on_the_broker(target)
    db = str(tmp_path / "checkpoints.sqlite")
    thread = uuid.uuid4().hex[:8]
    env = {**os.environ, **target.agent_env(), "PYTHONPATH": HERE}

    crashed = run_agent(env | {"LG_KILL": kill}, db, thread, "start", "approve")
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr
    lines = json_lines(crashed.stdout)
    key = lines[0]["key"]
    if kill == "after_answer":
        assert lines[1]["pass"] and not lines[1]["was_replay"]
        original = lines[1]["result"]
    else:
        assert len(lines) == 1  # killed while the tool was working: no answer seen
        original = None
    assert ledger.stats(key)["requests"] == 1

    # A new process continues the thread from its last checkpoint, where the
    # approval is recorded and the refund node has not completed.
    resumed = run_agent(env, db, thread, "recover", "note")
    assert resumed.returncode == 0, resumed.stderr
    out = json_lines(resumed.stdout)
    # recover: the node runs again (a replay) up to the note question; note:
    # it runs once more (another replay) and the graph ends.
    assert [o.get("stage", "pass") for o in out] == ["pass", "recover", "pass", "note"], json.dumps(out, indent=1)
    passes = [o for o in out if o.get("pass")]
    ledger_answer = ledger.requests_of(key)[0]["response"]
    for p in passes:
        assert p["key"] == key and p["status"] == "succeeded" and p["was_replay"]
        assert p["result"] == ledger_answer  # the original answer, not a second refund
    if original is not None:
        assert original == ledger_answer
    assert out[1]["interrupt"]["refund_id"] == ledger_answer["refund_id"]
    assert out[3]["state"]["refund"] == ledger_answer and out[3]["interrupt"] is None
    assert ledger.effects_of(key) == 1
    report(target, f"crash {kill}", key, ledger.effects_of(key), [p["was_replay"] for p in passes])


def run_agent(env, db, thread, *stages):
    return subprocess.run([sys.executable, os.path.join(HERE, "lg_agent.py"), db, thread, *stages], env=env,
                          capture_output=True, text=True, timeout=AGENT_TIMEOUT_S)


def json_lines(out):
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def report(target, scenario, key, effects, replays):
    """One line per scenario for the run's log (run-tests.sh keeps it)."""
    path = os.environ.get("TOOLEXEC_LANGGRAPH_REPORT")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"target": repr(target), "scenario": scenario, "key": key, "effects": effects,
                                "was_replay": replays}) + "\n")

