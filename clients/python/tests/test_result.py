from datetime import datetime, timezone

import pytest

from toolexec import ErrorInfo, Result


def test_from_wire_reads_every_field():
    r = Result.from_wire({
        "v": 1, "intent_id": "i2", "type": "call", "tenant": "acme", "key": "k", "tool": "t",
        "status": "succeeded", "result": {"refund_id": "rf_1"}, "was_replay": True,
        "original_intent_id": "i1", "original_called_at": 1733000000123, "completed_at": 1733000000456,
        "attempt": 1, "previous_status": "not_executed", "unknown_field": 7,
    })
    assert r.status == "succeeded" and r.succeeded and r.terminal
    assert r.result == {"refund_id": "rf_1"}
    assert r.was_replay and r.original_intent_id == "i1" and r.intent_id == "i2"
    assert r.original_called_at == datetime(2024, 11, 30, 20, 53, 20, 123000, tzinfo=timezone.utc)
    assert r.completed_at.microsecond == 456000
    assert (r.tenant, r.key, r.tool, r.type, r.attempt, r.previous_status) == ("acme", "k", "t", "call", 1, "not_executed")
    assert r.raw["unknown_field"] == 7


def test_rfc3339_times_are_read_too():
    r = Result.from_wire({"status": "failed", "original_called_at": "2024-11-30T20:53:20.123Z",
                          "error": {"code": "http_400", "message": "no"}})
    assert r.original_called_at == datetime(2024, 11, 30, 20, 53, 20, 123000, tzinfo=timezone.utc)
    assert r.error == ErrorInfo("http_400", "no")


def test_pending_is_not_terminal():
    assert not Result.from_wire({"status": "pending"}).terminal
    assert not Result.from_wire({"status": "compensation_pending"}).terminal


def test_an_answer_without_status_is_an_error():
    with pytest.raises(ValueError):
        Result.from_wire({"result": 1})


def test_json_round_trip_keeps_everything_including_bytes():
    r = Result.from_wire({"status": "succeeded", "result": {"b": b"\x00\xff", "n": [1, 2.5]}, "was_replay": False,
                          "original_intent_id": "i1", "original_called_at": 1733000000123, "key": "k"})
    back = Result.from_json(r.to_json())
    assert back == r
    assert back.result["b"] == b"\x00\xff"
