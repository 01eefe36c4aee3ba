"""Topic configs as Apache Kafka 3.9 defines and validates them (`TopicConfig`, `LogConfig`'s `ConfigDef`).

Owns the names a topic config may have, each one's type and validator, and `config_problem`: the
message Kafka's `InvalidConfigurationException` carries for the first bad entry (CreateTopics answers it
with INVALID_CONFIG), or None. An unknown name is "Unknown topic config name: <name>"; a value that does
not parse is "Invalid value <value> for configuration <name>: Not a number of type LONG" (or INT,
DOUBLE, or "Expected value to be either true or false"); a parsed value outside its range or set names
the bound or the allowed values. The tests' messages were read from Apache Kafka 3.9.2's own answers (live:
tests/integration/process_backend/test_topic_config_messages_on_apache_kafka.py). The experiment loader
refuses with it, naming the file, line and field. Names that Kafka validates with a validator
of its own (throttled replica lists, message format versions) are accepted as given here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

INT_RANGE = (-(2**31), 2**31 - 1)
LONG_RANGE = (-(2**63), 2**63 - 1)
_INTEGER = re.compile(r"[+-]?[0-9]+")


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One topic config: its type (INT, LONG, DOUBLE, BOOLEAN, STRING, LIST), bounds and allowed values."""

    type: str
    at_least: float | None = None
    at_most: float | None = None
    one_of: tuple[str, ...] = ()


def _int(at_least: int | None = None) -> ConfigKey:
    return ConfigKey("INT", at_least)


def _long(at_least: int | None = None) -> ConfigKey:
    return ConfigKey("LONG", at_least)


BOOLEAN = ConfigKey("BOOLEAN")
FREE = ConfigKey("STRING")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

TOPIC_CONFIGS: Mapping[str, ConfigKey] = {
    "cleanup.policy": ConfigKey("LIST", one_of=("compact", "delete")),
    "compression.type": ConfigKey("STRING", one_of=COMPRESSION_TYPES),
    "compression.gzip.level": _int(),
    "compression.lz4.level": _int(),
    "compression.zstd.level": _int(),
    "delete.retention.ms": _long(0),
    "file.delete.delay.ms": _long(0),
    "flush.messages": _long(1),
    "flush.ms": _long(0),
    "follower.replication.throttled.replicas": FREE,
    "index.interval.bytes": _int(0),
    "leader.replication.throttled.replicas": FREE,
    "local.retention.bytes": _long(-2),
    "local.retention.ms": _long(-2),
    "max.compaction.lag.ms": _long(1),
    "max.message.bytes": _int(0),
    "message.downconversion.enable": BOOLEAN,
    "message.format.version": FREE,
    "message.timestamp.after.max.ms": _long(0),
    "message.timestamp.before.max.ms": _long(0),
    "message.timestamp.difference.max.ms": _long(0),
    "message.timestamp.type": ConfigKey("STRING", one_of=("CreateTime", "LogAppendTime")),
    "min.cleanable.dirty.ratio": ConfigKey("DOUBLE", 0, 1),
    "min.compaction.lag.ms": _long(0),
    "min.insync.replicas": _int(1),
    "preallocate": BOOLEAN,
    "remote.log.copy.disable": BOOLEAN,
    "remote.log.delete.on.disable": BOOLEAN,
    "remote.storage.enable": BOOLEAN,
    "retention.bytes": _long(),
    "retention.ms": _long(-1),
    "segment.bytes": _int(14),
    "segment.index.bytes": _int(4),
    "segment.jitter.ms": _long(0),
    "segment.ms": _long(1),
    "unclean.leader.election.enable": BOOLEAN,
}
"""Every topic config name Kafka 3.9 knows (`TopicConfig`), with what `LogConfig` checks of its value."""


def _number(key: ConfigKey, text: str) -> int | float | None:
    """The value parsed as Java's `ConfigDef.parseType` would (trimmed), or None when it is not one."""
    if key.type == "DOUBLE":
        try:
            return float(text)
        except ValueError:
            return None
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    low, high = INT_RANGE if key.type == "INT" else LONG_RANGE
    return value if low <= value <= high else None


def _value_problem(name: str, key: ConfigKey, raw: str) -> str | None:
    text = raw.strip()
    if key.type in ("INT", "LONG", "DOUBLE"):
        number = _number(key, text)
        if number is None:
            return f"Invalid value {raw} for configuration {name}: Not a number of type {key.type}"
        shown = repr(float(number)) if key.type == "DOUBLE" else str(number)
        if key.at_least is not None and number < key.at_least:
            return f"Invalid value {shown} for configuration {name}: Value must be at least {_bound(key.at_least)}"
        if key.at_most is not None and number > key.at_most:
            return f"Invalid value {shown} for configuration {name}: Value must be no more than {_bound(key.at_most)}"
        return None
    if key.type == "BOOLEAN":
        if text.lower() not in ("true", "false"):
            return f"Invalid value {raw} for configuration {name}: Expected value to be either true or false"
        return None
    values = [v.strip() for v in text.split(",")] if key.type == "LIST" else [text]
    for value in values:
        if key.one_of and value not in key.one_of:
            return f"Invalid value {value} for configuration {name}: String must be one of: {', '.join(key.one_of)}"
    return None


def _bound(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(value)


def config_problem(configs: Mapping[str, str]) -> str | None:
    """Kafka's message for the first unknown name, then for the first bad value, of `configs`; None if all are good."""
    for name in configs:
        if name not in TOPIC_CONFIGS:
            return f"Unknown topic config name: {name}"
    for name, value in configs.items():
        problem = _value_problem(name, TOPIC_CONFIGS[name], value)
        if problem:
            return problem
    return None


def is_compacted(cleanup_policy: str) -> bool:
    """Whether a `cleanup.policy` value includes compaction (`compact` or `compact,delete`)."""
    return "compact" in (p.strip() for p in cleanup_policy.split(","))
