"""A LangGraph agent that refunds an order through toolexec, instrumented
for the tests (test_e2e_langgraph.py).

The graph: START -> prepare -> refund -> END.
- ``prepare`` makes the idempotency key and stores it in the state
  (``refund_idempotency_key``): it is checkpointed with this step, before
  the step that calls the tool runs.
- ``refund`` takes the key from the state, asks a human for approval
  (``interrupt()``), calls the tool through toolexec, then asks for a note
  for the customer (a second ``interrupt()``). On every resume LangGraph runs
  the node body again from the top, so the tool call is made again: the key
  makes it a replay, not a second refund.

As a program (for the crash test), with the client from agent_env.py:
    python lg_agent.py DB THREAD STAGE...
stages: ``start`` (run to the approval), ``approve`` (resume with True, to
the note question), ``recover`` (continue from the last checkpoint, as a new
process does after a crash), ``note`` (resume with a note, to the end). Each tool
pass prints a JSON line. LG_KILL=after_send kills the process (SIGKILL)
once the intent was sent and the tool was reached, before the answer;
LG_KILL=after_answer kills it right after the answer. Either way the node's
checkpoint is never written.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
import time
import urllib.request
from typing import Any, Callable, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

import toolexec
from toolexec import keys


class RefundState(TypedDict, total=False):
    order_id: str
    amount: int
    refund_idempotency_key: str
    refund: dict
    note: str


def build(client: toolexec.Client, tool: str, checkpointer: Any, on_pass: Callable[[toolexec.Result], None],
          wait: float = 20.0, on_no_answer: Callable[[str], None] | None = None):
    @client.tool(tool)
    def refund(order_id: str, amount: int) -> toolexec.Result:
        """Refund an order."""

    def prepare(state: RefundState) -> dict:
        return {keys.field("refund"): keys.in_state(dict(state), "refund")}

    def refund_node(state: RefundState) -> dict:
        key = keys.from_state(state, "refund")  # taken from the state before interrupt()
        if not interrupt({"approve": f"refund {state['amount']} on {state['order_id']}?"}):
            return {"refund": {"declined": True}}
        try:
            r = refund.using(key=key, wait=wait)(order_id=state["order_id"], amount=state["amount"])
        except toolexec.NoAnswer:
            if on_no_answer is not None:
                on_no_answer(key)  # the crash test dies here, inside the node
            raise
        on_pass(r)
        note = interrupt({"refund_id": r.result["refund_id"], "ask": "a note for the customer?"})
        return {"refund": r.result, "note": note}

    g = StateGraph(RefundState)
    g.add_node("prepare", prepare)
    g.add_node("refund", refund_node)
    g.add_edge(START, "prepare")
    g.add_edge("prepare", "refund")
    g.add_edge("refund", END)
    return g.compile(checkpointer=checkpointer)


def _emit(d: dict) -> None:
    print(json.dumps(d), flush=True)


def _kill_once_the_tool_has_it(key: str) -> None:
    url = os.environ["LEDGER_URL"] + "/stats?key=" + key
    for _ in range(400):
        if json.load(urllib.request.urlopen(url))["requests"] > 0:
            break
        time.sleep(0.05)
    os.kill(os.getpid(), signal.SIGKILL)


def main() -> None:
    from langgraph.checkpoint.sqlite import SqliteSaver

    from agent_env import make_client

    db, thread, stages = sys.argv[1], sys.argv[2], sys.argv[3:]
    kill = os.environ.get("LG_KILL", "")
    tool = os.environ.get("LG_TOOL", "py.slow_refund")
    client = make_client()
    saver = SqliteSaver(sqlite3.connect(db, check_same_thread=False))
    cfg = {"configurable": {"thread_id": thread}}
    state_key: list[str] = []

    def on_pass(r: toolexec.Result) -> None:
        _emit({"pass": True, "key": r.key, "status": r.status, "was_replay": r.was_replay, "result": r.result})
        if kill == "after_answer":
            os.kill(os.getpid(), signal.SIGKILL)

    wait = 0.3 if kill == "after_send" else 30.0
    graph = build(client, tool, saver, on_pass, wait=wait,
                  on_no_answer=_kill_once_the_tool_has_it if kill == "after_send" else None)
    for stage in stages:
        if stage == "start":
            out = graph.invoke({"order_id": "o-" + thread, "amount": 30}, cfg)
            state_key.append(graph.get_state(cfg).values["refund_idempotency_key"])
            _emit({"stage": stage, "key": state_key[0], "interrupt": _interrupt(out)})
            continue
        # "recover" continues the thread from its last checkpoint (after a
        # crash): the approval given before the crash is in the checkpoint
        # already (LangGraph writes a resume value when the run starts).
        value: Any = True if stage == "approve" else "thank you for your patience"
        out = graph.invoke(None if stage == "recover" else Command(resume=value), cfg)
        _emit({"stage": stage, "interrupt": _interrupt(out), "state": graph.get_state(cfg).values})
    client.close()


def _interrupt(out: Any) -> Any:
    its = out.get("__interrupt__") if isinstance(out, dict) else None
    return its[0].value if its else None


if __name__ == "__main__":
    main()
