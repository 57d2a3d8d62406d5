"""Every message says what to do: the advice in the text of each error a
newcomer meets first (conflict, schema error, refused token, unknown tool,
no broker), and the zero-configuration client of the embedded default."""

import os
import socket

import httpx
import pytest

from toolexec import Client, ConfigError, Conflict, Rejected, TransportError, Unauthorized, UnknownTool

BASE = "http://gw.test"


def mock(handler, **kw):
    return Client.http(BASE, "tok", http_client=httpx.Client(transport=httpx.MockTransport(handler)), **kw)


def problem(status, code, detail, **kw):
    return httpx.Response(status, headers={"Content-Type": "application/problem+json"},
                          json={"type": "x", "title": "t", "status": status, "code": code, "detail": detail, **kw})


def test_a_conflict_says_to_send_the_original_arguments_or_use_a_new_key():
    c = mock(lambda req: problem(422, "args_mismatch", 'key was first used by intent "i0" with tool "t" and other '
                                                       'arguments'))
    with pytest.raises(Conflict) as e:
        c.call("payments.refund", key="k1", args={"amount": 99})
    msg = str(e.value)
    assert 'intent "i0"' in msg and "nothing ran" in msg
    assert "Send the original arguments, or use a new key" in msg


def test_a_schema_error_is_said_once_and_the_others_are_added():
    first = "/amount: exclusiveMinimum: got -5, want 0"
    detail = f"1 argument error(s) against the input schema of demo.refund; first at {first}"
    c = mock(lambda req: problem(400, "invalid_args", detail,
                                 errors=[{"path": "/amount", "message": "exclusiveMinimum: got -5, want 0"}]))
    with pytest.raises(Rejected) as e:
        c.call("demo.refund", key="k1", args={"amount": -5})
    assert str(e.value).count(first) == 1, str(e.value)
    two = mock(lambda req: problem(400, "invalid_args", detail,
                                   errors=[{"path": "/amount", "message": "exclusiveMinimum: got -5, want 0"},
                                           {"path": "/currency", "message": "pattern mismatch"}]))
    with pytest.raises(Rejected) as e:
        two.call("demo.refund", key="k1", args={"amount": -5, "currency": "e"})
    assert str(e.value).count(first) == 1 and "/currency: pattern mismatch" in str(e.value)


def test_a_refused_token_says_where_it_came_from_and_where_the_right_one_is(tmp_path, monkeypatch):
    gw = "token unknown: the embedded executor keeps it in <data-dir>/gateway.token"
    refuse = httpx.MockTransport(lambda req: problem(401, "unauthorized", gw))
    with pytest.raises(Unauthorized) as e:
        mock(lambda req: problem(401, "unauthorized", gw)).call("demo.echo", key="k", args={})
    msg = str(e.value)
    assert "refused the token (401: token unknown" in msg and "came from token=" in msg
    assert "<data-dir>/gateway.token" in msg and "export TOOLEXEC_TOKEN_FILE=" in msg
    path = tmp_path / "stale.token"
    path.write_text("tx_stale\n")
    monkeypatch.setenv("TOOLEXEC_TOKEN_FILE", str(path))
    monkeypatch.delenv("TOOLEXEC_TOKEN", raising=False)
    with pytest.raises(Unauthorized, match=f"came from \\$TOOLEXEC_TOKEN_FILE \\({path}\\)"):
        Client.http(BASE, http_client=httpx.Client(transport=refuse)).list_tools()


def test_an_unknown_tool_passes_the_suggestion_on_and_says_how_to_list_tools():
    c = mock(lambda req: problem(404, "unknown_tool", 'no tool "demo.refnd": did you mean demo.refund?; '
                                                      'GET /v1/tools lists the tools this token may call'))
    with pytest.raises(UnknownTool) as e:
        c.call("demo.refnd", key="k1", args={"amount": 1})
    assert "did you mean demo.refund?" in str(e.value) and "client.list_tools()" in str(e.value)


# ---- zero configuration for the embedded default


def _echo_auth(seen):
    def handler(req):
        seen.append((str(req.url), req.headers["Authorization"]))
        return httpx.Response(200, json={"tools": []})
    return httpx.Client(transport=httpx.MockTransport(handler))


def test_client_http_with_no_arguments_reads_the_environment(tmp_path, monkeypatch):
    tok = tmp_path / "elsewhere" / "gateway.token"
    tok.parent.mkdir()
    tok.write_text("tx_from_file\n")
    monkeypatch.chdir(tmp_path)  # no ./data here
    monkeypatch.delenv("TOOLEXEC_TOKEN", raising=False)
    monkeypatch.setenv("TOOLEXEC_URL", "http://127.0.0.1:31080")
    monkeypatch.setenv("TOOLEXEC_TOKEN_FILE", str(tok))
    seen = []
    Client.http(http_client=_echo_auth(seen)).list_tools()
    monkeypatch.setenv("TOOLEXEC_TOKEN", "tx_from_env")  # the token itself wins over the file
    Client.http(http_client=_echo_auth(seen)).list_tools()
    Client.http("http://gw.test", "tx_given", http_client=_echo_auth(seen)).list_tools()  # arguments win
    assert seen == [("http://127.0.0.1:31080/v1/tools", "Bearer tx_from_file"),
                    ("http://127.0.0.1:31080/v1/tools", "Bearer tx_from_env"),
                    ("http://gw.test/v1/tools", "Bearer tx_given")]


def test_client_http_falls_back_to_the_embedded_default(tmp_path, monkeypatch):
    for v in ("TOOLEXEC_URL", "TOOLEXEC_TOKEN", "TOOLEXEC_TOKEN_FILE"):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as e:
        Client.http()
    msg = str(e.value)
    assert os.path.join(str(tmp_path), "data", "gateway.token") in msg and "export TOOLEXEC_TOKEN_FILE" in msg
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "gateway.token").write_text("tx_default\n")
    seen = []
    Client.http(http_client=_echo_auth(seen)).list_tools()
    assert seen == [("http://127.0.0.1:8080/v1/tools", "Bearer tx_default")]


# ---- the Kafka transport with no broker


def test_no_broker_is_one_quiet_error_that_names_the_address_and_the_flags(capfd):
    pytest.importorskip("confluent_kafka")
    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        addr = f"127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(TransportError) as e:
        Client.kafka(addr, connect_timeout=30)
    msg = str(e.value)
    assert f"no broker at {addr}" in msg and "Connection refused" in msg
    assert "--embedded-addr" in msg and "--brokers" in msg and "nothing was sent" in msg
    out, err = capfd.readouterr()
    assert out == "" and err == "", "librdkafka must be quiet while connecting"
