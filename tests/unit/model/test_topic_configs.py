"""Topic config validation (the loader's) words every refusal as Apache Kafka 3.9 does (the messages below were
read from Kafka's own answers; tests/integration/process_backend/test_topic_config_messages_on_apache_kafka.py
compares them with Apache Kafka live)."""

from __future__ import annotations

import pytest

from harness.model.topic_configs import TOPIC_CONFIGS, config_problem, is_compacted


@pytest.mark.parametrize(("configs", "message"), [
    ({"dummy.doesntexist": "1"}, "Unknown topic config name: dummy.doesntexist"),
    ({"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type LONG"),
    ({"retention.ms": ""}, "Invalid value  for configuration retention.ms: Not a number of type LONG"),
    ({"cleanup.policy": "bogus"},
     "Invalid value bogus for configuration cleanup.policy: String must be one of: compact, delete"),
    ({"min.insync.replicas": "0"}, "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1"),
    ({"unclean.leader.election.enable": "maybe"},
     "Invalid value maybe for configuration unclean.leader.election.enable: Expected value to be either true or false"),
    ({"min.cleanable.dirty.ratio": "2"},
     "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1"),
    ({"compression.type": "brotli"}, "Invalid value brotli for configuration compression.type: String must be one "
                                     "of: uncompressed, zstd, lz4, snappy, gzip, producer"),
    ({"segment.bytes": "99999999999"}, "Invalid value 99999999999 for configuration segment.bytes: Not a number of "
                                       "type INT"),
])
def test_a_bad_topic_config_is_refused_with_kafkas_message(configs: dict[str, str], message: str) -> None:
    assert config_problem(configs) == message


def test_an_unknown_name_is_reported_before_a_bad_value() -> None:
    assert config_problem({"retention.ms": "x", "nope": "1"}) == "Unknown topic config name: nope"


def test_good_configs_pass_including_lists_and_padding() -> None:
    good = {"cleanup.policy": "compact,delete", "retention.ms": " 1000 ", "min.insync.replicas": "2",
            "unclean.leader.election.enable": "TRUE", "min.cleanable.dirty.ratio": "0.5", "retention.bytes": "-1",
            "message.timestamp.type": "LogAppendTime", "compression.type": "zstd"}
    assert config_problem(good) is None
    assert len(TOPIC_CONFIGS) >= 30


def test_compaction_is_read_from_the_policy_list() -> None:
    assert is_compacted("compact") and is_compacted("delete, compact") and not is_compacted("delete")
