import os
import signal
import subprocess
import sys
import textwrap

import pytest

from toolexec import Conflict, InDoubt, InvalidRequest, Journal, Result, args_hash, current_step


def test_a_step_keeps_its_key_and_records_its_answer(tmp_path):
    path = str(tmp_path / "j.sqlite")
    with Journal(path) as j:
        with j.step("refund-7") as step:
            key = step.key
            assert step.status == "in_progress" and not step.resumed and not step.completed
            assert current_step() is step
            assert j.get("refund-7").status == "in_progress"
            step.complete(Result.from_wire({"status": "succeeded", "result": {"id": 1}, "key": key}))
        assert current_step() is None
        rec = j.get("refund-7")
        assert rec.status == "completed" and rec.key == key and rec.answer.result == {"id": 1}
    with Journal(path) as j2:  # another process's view of the same file
        with j2.step("refund-7") as again:
            assert again.key == key and again.completed
            assert again.answer.result == {"id": 1} and again.answer.journaled
            # printed, a journaled answer reads as what it is: nothing ran for it
            assert again.answer.was_replay
        assert j2.get("refund-7").entries == 2


def test_an_exception_without_a_final_answer_leaves_the_step_in_progress(tmp_path):
    with Journal(str(tmp_path / "j.sqlite")) as j:
        with pytest.raises(RuntimeError):
            with j.step("s") as step:
                key = step.key
                raise RuntimeError("crash in the body")
        with pytest.raises(InDoubt):
            with j.step("s") as step:
                assert step.key == key and step.resumed
                raise InDoubt("parked", Result.from_wire({"status": "pending"}))
        assert j.get("s").status == "in_progress"


def test_a_conflict_is_a_final_answer_and_completes_the_step(tmp_path):
    with Journal(str(tmp_path / "j.sqlite")) as j:
        ans = Result.from_wire({"status": "conflict", "error": {"code": "args_mismatch"}})
        with pytest.raises(Conflict):
            with j.step("s"):
                raise Conflict("conflict", ans)
        rec = j.get("s")
        assert rec.status == "completed" and rec.answer.status == "conflict"


def test_a_caught_in_doubt_keeps_the_step_in_progress(tmp_path):
    with Journal(str(tmp_path / "j.sqlite")) as j:
        with j.step("s") as step:
            step.sending("payments.refund", {"amount": 1})
            # the call raised InDoubt and the body caught it and went on
        assert j.get("s").status == "in_progress"
        assert j.get("s").tool == "payments.refund"
        with j.step("empty"):
            pass
        assert j.get("empty").status == "completed" and j.get("empty").answer is None


def test_one_step_is_one_call(tmp_path):
    with Journal(str(tmp_path / "j.sqlite")) as j:
        with j.step("s") as step:
            step.bind_call("a", {"x": 1, "y": [1.0, {"b": 2, "a": 3}]})
            step.bind_call("a", {"y": [1, {"a": 3, "b": 2.0}], "x": 1.0})  # the same canonical arguments
            with pytest.raises(Conflict, match="tool 'b'") as e:
                step.bind_call("b", {"x": 1, "y": [1.0, {"b": 2, "a": 3}]})
            assert e.value.code == "args_mismatch"
            with pytest.raises(Conflict, match="other arguments"):
                step.bind_call("a", {"x": 2, "y": [1.0, {"b": 2, "a": 3}]})
        rec = j.get("s")
        assert rec.tool == "a" and rec.args_hash == args_hash({"x": 1, "y": [1, {"a": 3, "b": 2}]}).hex()


def test_a_chosen_key_must_match_the_stored_one(tmp_path):
    with Journal(str(tmp_path / "j.sqlite")) as j:
        with j.step("s", key="mine") as step:
            assert step.key == "mine"
        with pytest.raises(InvalidRequest, match="recorded with key"):
            with j.step("s", key="other"):
                pass
        j.forget("s")
        assert j.get("s") is None


def test_bad_names_and_use_outside_the_block(tmp_path):
    with Journal(str(tmp_path / "j.sqlite")) as j:
        with pytest.raises(InvalidRequest):
            j.step("")
        with pytest.raises(InvalidRequest):
            j.step("x" * 201)
        s = j.step("later")
        with pytest.raises(InvalidRequest, match="outside"):
            _ = s.key


def test_the_key_survives_sigkill_of_the_process(tmp_path):
    """The key is durable before the body runs: a process killed inside the
    block leaves the step in_progress with its key, and the next process
    gets the same key (and resumed=True)."""
    path = str(tmp_path / "j.sqlite")
    script = textwrap.dedent(f"""
        import os, signal, sys
        from toolexec import Journal
        j = Journal({path!r})
        with j.step("refund-7") as step:
            print(step.key, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
    """)
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert p.returncode == -signal.SIGKILL, p.stderr
    key = p.stdout.strip()
    assert key.startswith("refund-7-")
    with Journal(path) as j:
        with j.step("refund-7") as step:
            assert step.key == key
            assert step.resumed and step.status == "in_progress"


# ---- one step is one call: one tool, one set of arguments


def _refund_client(amounts):
    """A client whose gateway refunds the amount it is sent and records it."""
    import httpx

    from toolexec import Client

    def handler(req):
        body = __import__("json").loads(req.content)
        amounts.append(body["amount"])
        return httpx.Response(200, json={"v": 1, "intent_id": "i1", "key": "k", "tool": "payments.refund",
                                         "status": "succeeded", "result": {"refunded": body["amount"]}})

    return Client.http("http://gw.test", "tok", http_client=httpx.Client(transport=httpx.MockTransport(handler)))


def test_a_completed_step_called_with_other_arguments_is_a_conflict(tmp_path):
    """The journal answers a completed step from its record only for the
    call it recorded: other arguments get a Conflict that names the step,
    not the stored answer of another call."""
    path = str(tmp_path / "j.sqlite")
    sent = []
    with Journal(path) as j, _refund_client(sent) as c:
        with j.step("refund-step"):
            assert c.call("payments.refund", args={"order": "o-1", "amount": 1}).result == {"refunded": 1}
        with j.step("refund-step"):  # the same run, other arguments
            with pytest.raises(Conflict) as e:
                c.call("payments.refund", args={"order": "o-1", "amount": 99})
    assert "refund-step" in str(e.value) and "journal.forget('refund-step')" in str(e.value)
    assert e.value.code == "args_mismatch" and e.value.result.journaled
    assert sent == [1]
    with Journal(path) as j, _refund_client(sent) as c:  # a later run
        with j.step("refund-step"):
            with pytest.raises(Conflict):
                c.call("payments.refund", args={"amount": 99, "order": "o-1"})
            # the same call, keys in another order and 1 as 1.0: the answer
            r = c.call("payments.refund", args={"amount": 1.0, "order": "o-1"})
            assert r.journaled and r.result == {"refunded": 1}
        rec = j.get("refund-step")
        assert rec.status == "completed" and rec.answer.result == {"refunded": 1}
    assert sent == [1]


def test_a_step_in_doubt_called_with_other_arguments_is_a_conflict_and_stays_in_progress(tmp_path):
    """A step whose call got no final answer is sent again under its key;
    with other arguments nothing is sent, and the journal's conflict does
    not complete the step: the call in doubt still owns it."""
    import httpx

    from toolexec import Client

    sent = []

    def handler(req):
        sent.append(__import__("json").loads(req.content)["amount"])
        status = "pending" if len(sent) == 1 else "succeeded"
        return httpx.Response(200, json={"v": 1, "intent_id": "i1", "key": "k", "tool": "payments.refund",
                                         "status": status, "result": {"n": len(sent)}})

    with Journal(str(tmp_path / "j.sqlite")) as j, \
            Client.http("http://gw.test", "tok", http_client=httpx.Client(transport=httpx.MockTransport(handler))) as c:
        with pytest.raises(InDoubt):
            with j.step("refund-step"):
                c.call("payments.refund", args={"amount": 1}, wait=0)
        with j.step("refund-step") as step:
            assert step.resumed
            with pytest.raises(Conflict) as e:
                c.call("payments.refund", args={"amount": 99})
            assert "do not forget the step" in str(e.value) and step.key in str(e.value)
        assert sent == [1] and j.get("refund-step").status == "in_progress"
        with pytest.raises(Conflict):  # the conflict leaves the block
            with j.step("refund-step"):
                c.call("payments.refund", args={"amount": 99})
        assert sent == [1] and j.get("refund-step").status == "in_progress"
        with j.step("refund-step"):
            assert c.call("payments.refund", args={"amount": 1.0}).result == {"n": 2}
        assert sent == [1, 1] and j.get("refund-step").status == "completed"


_OLD_SCHEMA = """
CREATE TABLE toolexec_steps (
    name TEXT PRIMARY KEY, key TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('in_progress', 'completed')),
    tool TEXT, answer TEXT, entries INTEGER NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL)
"""


def test_a_journal_written_by_0_1_0_adopts_the_next_call_of_each_step_and_checks_the_rest(tmp_path):
    """toolexec 0.1.0 kept no hash of the arguments. Opening its file adds
    the column; the next call of an old step is taken as the step's own
    (with a warning: there is nothing to check it against), later ones are
    checked."""
    import sqlite3

    path = str(tmp_path / "old.sqlite")
    db = sqlite3.connect(path)
    db.execute(_OLD_SCHEMA)
    done = Result.from_wire({"status": "succeeded", "result": {"refunded": 1}, "key": "k-done"}).to_json()
    db.execute("INSERT INTO toolexec_steps VALUES ('done', 'k-done', 'completed', 'payments.refund', ?, 1, 0, 0)",
               (done,))
    db.execute("INSERT INTO toolexec_steps VALUES ('open', 'k-open', 'in_progress', 'payments.refund', NULL, 1, 0, 0)")
    db.commit()
    db.close()
    sent = []
    with Journal(path) as j, _refund_client(sent) as c:
        assert j.get("done").args_hash is None and j.get("done").tool == "payments.refund"
        with j.step("done"):
            with pytest.warns(UserWarning, match="recorded by toolexec 0.1.0"):
                r = c.call("payments.refund", args={"amount": 1})
            assert r.journaled and r.result == {"refunded": 1}
            with pytest.raises(Conflict):
                c.call("payments.refund", args={"amount": 99})
        with j.step("open"):
            with pytest.warns(UserWarning, match="'open'"):
                assert c.call("payments.refund", args={"amount": 5}).result == {"refunded": 5}
        assert sent == [5]  # the completed step was answered by the journal
        with j.step("open"):
            with pytest.raises(Conflict):
                c.call("payments.refund", args={"amount": 6})
        with j.step("done"):
            with pytest.raises(Conflict):
                c.call("payments.other", args={"amount": 1})
    with Journal(path) as j:  # opened again: nothing to add
        assert j.get("open").args_hash == args_hash({"amount": 5}).hex()
