"""Kafka client properties, as ``--kafka-config`` reads them.

A properties file holds one ``name=value`` a line (``#`` and ``!`` start a
comment), with the standard librdkafka/Java names (``security.protocol``,
``sasl.mechanism``, ``sasl.username``, ``sasl.password``,
``ssl.ca.location``, ...), so the same file works with ``kcat -F``, with the
Go commands' ``--kafka-config`` and here. A value may be written
``${env:NAME}`` or ``${file:PATH}`` so that secrets stay out of the file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from .errors import ConfigError

#: A properties file larger than this is a mistake, not a configuration.
MAX_PROPERTIES_BYTES = 1 << 20

_REF = re.compile(r"\$\{(env|file):([^}]*)\}")

#: Properties the client sets itself: a file or dict setting them would
#: break how answers are read (or be silently overridden), so they are
#: refused with a clear message.
RESERVED = frozenset({
    "group.id", "enable.auto.commit", "enable.auto.offset.store", "auto.offset.reset",
    "isolation.level", "enable.partition.eof", "partitioner", "logger",
})


def load_properties(path: str) -> dict[str, str]:
    """Reads a properties file; ``${env:NAME}`` and ``${file:PATH}`` are
    expanded. Errors name the file and the line."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_PROPERTIES_BYTES + 1)
    except OSError as e:
        raise ConfigError(f"kafka config {path}: {e.strerror or e}") from None
    if len(data) > MAX_PROPERTIES_BYTES:
        raise ConfigError(f"kafka config {path}: larger than {MAX_PROPERTIES_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ConfigError(f"kafka config {path}: not UTF-8: {e}") from None
    return parse_properties(text, source=path)


def parse_properties(text: str, source: str = "<string>") -> dict[str, str]:
    """Parses properties text (see the module doc)."""
    out: dict[str, str] = {}
    for n, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or s[0] in "#!":
            continue
        name, sep, value = s.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ConfigError(f"kafka config {source}:{n}: expected name=value, got {s!r}")
        if name in out:
            raise ConfigError(f"kafka config {source}:{n}: {name} is set twice")
        out[name] = _expand(value.strip(), f"{source}:{n}")
    return out


def _expand(value: str, where: str) -> str:
    def ref(m: re.Match[str]) -> str:
        kind, arg = m.group(1), m.group(2)
        if kind == "env":
            if arg not in os.environ:
                raise ConfigError(f"kafka config {where}: environment variable {arg} is not set")
            return os.environ[arg]
        try:
            with open(arg, encoding="utf-8") as f:
                return f.read().strip()
        except OSError as e:
            raise ConfigError(f"kafka config {where}: ${{file:{arg}}}: {e.strerror or e}") from None

    return _REF.sub(ref, value)


def check(config: Mapping[str, object]) -> dict[str, str]:
    """Validates user properties: string names, no property the client sets
    itself. Values are passed on as strings, as librdkafka takes them."""
    out: dict[str, str] = {}
    for name, value in config.items():
        if not isinstance(name, str) or not name:
            raise ConfigError(f"kafka config: property name {name!r} is not a string")
        if name in RESERVED:
            raise ConfigError(f"kafka config: {name} is set by the client (answers are read "
                              f"read_committed by assignment, never through a consumer group)")
        if name == "bootstrap.servers":
            raise ConfigError("kafka config: give the brokers as the first argument, not bootstrap.servers")
        if isinstance(value, bool):
            out[name] = "true" if value else "false"
        else:
            out[name] = str(value)
    return out
