import os
import signal
import subprocess
import sys
import textwrap

import pytest

from toolexec import Conflict, InDoubt, InvalidRequest, Journal, Result, current_step


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
            step.sending("payments.refund")
            # the call raised InDoubt and the body caught it and went on
        assert j.get("s").status == "in_progress"
        assert j.get("s").tool == "payments.refund"
        with j.step("empty"):
            pass
        assert j.get("empty").status == "completed" and j.get("empty").answer is None


def test_one_step_is_one_call(tmp_path):
    with Journal(str(tmp_path / "j.sqlite")) as j:
        with j.step("s") as step:
            step.bind_tool("a")
            with pytest.raises(InvalidRequest, match="one step is one call"):
                step.bind_tool("b")


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
