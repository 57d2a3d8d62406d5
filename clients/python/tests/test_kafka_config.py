import pytest

from toolexec import ConfigError, load_properties
from toolexec.kafka_config import check, parse_properties


def test_properties_as_kcat_reads_them(tmp_path, monkeypatch):
    secret = tmp_path / "pw"
    secret.write_text("s3cret\n")
    monkeypatch.setenv("KAFKA_USER", "agent")
    f = tmp_path / "agent.properties"
    f.write_text(
        "# the agent role\n"
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism = SCRAM-SHA-512\n"
        "! another comment\n"
        "sasl.username=${env:KAFKA_USER}\n"
        f"sasl.password=${{file:{secret}}}\n"
        "ssl.ca.location=/etc/ca.pem\n")
    assert load_properties(str(f)) == {
        "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "agent",
        "sasl.password": "s3cret", "ssl.ca.location": "/etc/ca.pem"}


@pytest.mark.parametrize("text,msg", [
    ("no-equals-sign\n", ":1: expected name=value"),
    ("a=1\na=2\n", ":2: a is set twice"),
    ("p=${env:TOOLEXEC_SURELY_UNSET_VAR}\n", "TOOLEXEC_SURELY_UNSET_VAR is not set"),
    ("p=${file:/nonexistent/x}\n", "${file:/nonexistent/x}"),
])
def test_errors_name_the_line(text, msg):
    with pytest.raises(ConfigError, match=msg.replace("$", r"\$").replace("{", r"\{").replace("}", r"\}")):
        parse_properties(text, "f.properties")


def test_a_missing_file_is_a_config_error():
    with pytest.raises(ConfigError, match="nope.properties"):
        load_properties("/nonexistent/nope.properties")


def test_properties_the_client_owns_are_refused():
    for name in ("group.id", "isolation.level", "enable.auto.commit", "bootstrap.servers"):
        with pytest.raises(ConfigError, match=name):
            check({name: "x"})
    assert check({"enable.ssl.certificate.verification": False, "linger.ms": 5}) == {
        "enable.ssl.certificate.verification": "false", "linger.ms": "5"}
