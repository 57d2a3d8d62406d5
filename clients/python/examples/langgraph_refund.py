"""A LangGraph agent that refunds an order through toolexec: the node body
runs again on every resume, the refund does not.

Run the executor on its embedded default (it serves the gateway on
127.0.0.1:8080 and writes its token to ./data/gateway.token), then:

    pip install "./clients/python[langgraph]"
    python clients/python/examples/langgraph_refund.py

Settings (environment): TOOLEXEC_URL (default http://127.0.0.1:8080),
TOOLEXEC_TOKEN (default: read from TOOLEXEC_TOKEN_FILE, default
./data/gateway.token), TOOLEXEC_REFUND_TOOL (default demo.refund);
TOOLEXEC_BROKERS uses the Kafka transport instead of the gateway.
"""

import os
import sys
import uuid
from typing import TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt

import toolexec
from toolexec import keys


def make_client() -> toolexec.Client:
    if os.environ.get("TOOLEXEC_BROKERS"):
        return toolexec.Client.kafka(os.environ["TOOLEXEC_BROKERS"],
                                     topic_prefix=os.environ.get("TOOLEXEC_TOPIC_PREFIX", "tool."))
    # TOOLEXEC_URL and TOOLEXEC_TOKEN_FILE (the executor prints both at
    # start), else the embedded default's address and ./data/gateway.token.
    return toolexec.Client.http()


client = make_client()


@client.tool(os.environ.get("TOOLEXEC_REFUND_TOOL", "demo.refund"))
def refund(order_id: str, amount: int) -> toolexec.Result:
    """Refund an order, in full or in part."""


class State(TypedDict, total=False):
    order_id: str
    amount: int
    refund_idempotency_key: str
    refund: dict
    note: str


def prepare(state: State) -> dict:
    # The key is made here and checkpointed with this step, before the step
    # that calls the tool: a resume, a retry or a crash reuses it.
    return {keys.field("refund"): keys.in_state(dict(state), "refund")}


passes: list[toolexec.Result] = []


def refund_node(state: State) -> dict:
    key = keys.from_state(state, "refund")  # from the state, before interrupt()
    if not interrupt(f"refund {state['amount']} on order {state['order_id']}?"):
        return {"refund": {"declined": True}}
    r = refund.using(key=key)(order_id=state["order_id"], amount=state["amount"])
    passes.append(r)
    print(f"  pass {len(passes)}: {r.status} {r.result} was_replay={r.was_replay}")
    note = interrupt(f"refunded as {r.result['refund_id']}: a note for the customer?")
    return {"refund": r.result, "note": note}


builder = StateGraph(State)
builder.add_node("prepare", prepare)
builder.add_node("refund", refund_node)
builder.add_edge(START, "prepare")
builder.add_edge("prepare", "refund")
builder.add_edge("refund", END)
graph = builder.compile(checkpointer=InMemorySaver())

config = {"configurable": {"thread_id": "thread-" + uuid.uuid4().hex[:8]}}
out = graph.invoke({"order_id": "o-1001", "amount": 30}, config)
print("agent asks:", out["__interrupt__"][0].value, "-> yes")
out = graph.invoke(Command(resume=True), config)
print("agent asks:", out["__interrupt__"][0].value, "-> 'sorry for the delay'")
out = graph.invoke(Command(resume="sorry for the delay"), config)  # the node body runs again
client.close()

one_refund = len(passes) == 2 and passes[1].was_replay and passes[1].result == passes[0].result
print("done:", out["refund"], "note:", repr(out["note"]))
print("the node ran twice, the refund once" if one_refund else "UNEXPECTED: the refund ran twice")
sys.exit(0 if one_refund else 1)
