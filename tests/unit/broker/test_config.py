"""Unit tests of server.properties parsing into `BrokerConfig` (Kafka property names)."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.broker.config import Listener, build_config, load_config, parse_properties
from harness.errors import ConfigError

SAMPLE = r"""
# comment
! also a comment
broker.id = 3
listeners=FROM1://127.0.0.1:9093,EXTERNAL://:9092
advertised.listeners=FROM1://10.0.0.1:19093,EXTERNAL://localhost:29092
listener.security.protocol.map=FROM1:PLAINTEXT,EXTERNAL:PLAINTEXT
inter.broker.listener.name=FROM1
zookeeper.connect=127.0.0.1:2181/kafka
log.dirs=/a,/b
min.insync.replicas: 2
auto.create.topics.enable false
num.network.threads=3
long.value=first\
  second
"""


def test_kafka_property_names_parse_into_typed_fields() -> None:
    """Every honoured property lands in its typed field; separators '=', ':' and space all work."""
    cfg = build_config(parse_properties(SAMPLE))
    assert cfg.broker_id == 3
    assert cfg.listeners == (Listener("FROM1", "127.0.0.1", 9093), Listener("EXTERNAL", "", 9092))
    assert cfg.advertised()[1] == Listener("EXTERNAL", "localhost", 29092)
    assert cfg.security_protocol("FROM1") == "PLAINTEXT"
    assert cfg.inter_broker_listener_name == "FROM1"
    assert cfg.zookeeper_connect == "127.0.0.1:2181/kafka"
    assert cfg.log_dirs == ("/a", "/b")
    assert cfg.min_insync_replicas == 2 and cfg.auto_create_topics_enable is False


def test_unknown_properties_are_accepted_and_listed_as_ignored() -> None:
    """Properties this broker does not implement are kept, not rejected, and listed once."""
    cfg = build_config(parse_properties(SAMPLE))
    assert cfg.ignored == ("long.value", "num.network.threads")
    assert dict(cfg.properties)["long.value"] == "firstsecond"


def test_reference_bugs_parse_to_a_frozenset() -> None:
    """`reference.bugs` (reserved for part 2) is a comma list turned into a frozenset."""
    assert build_config({"reference.bugs": "ack_before_replication, unclean_election"}).reference_bugs == frozenset(
        {"ack_before_replication", "unclean_election"})
    assert build_config({}).reference_bugs == frozenset()


def test_defaults_follow_kafka() -> None:
    """Unset properties take Kafka's defaults (offsets RF 3, 50 offsets partitions, 3 s initial delay)."""
    cfg = build_config({})
    assert (cfg.offsets_topic_replication_factor, cfg.offsets_topic_num_partitions) == (3, 50)
    assert cfg.group_initial_rebalance_delay_ms == 3000
    assert not cfg.flush_every_batch()
    assert build_config({"log.flush.interval.messages": "1"}).flush_every_batch()


def test_overrides_apply_after_the_file(tmp_path: Path) -> None:
    """--override key=value wins over the file."""
    path = tmp_path / "server.properties"
    path.write_text("broker.id=1\nnum.partitions=4\n")
    cfg = load_config(path, ["num.partitions=7"])
    assert (cfg.broker_id, cfg.num_partitions) == (1, 7)


@pytest.mark.parametrize("props", [
    {"broker.id": "x"},
    {"listeners": "PLAINTEXT//127.0.0.1:9092"},
    {"auto.create.topics.enable": "maybe"},
    {"listeners": "A://:1", "advertised.listeners": "B://h:2"},
    {"listeners": "A://:1", "inter.broker.listener.name": "B"},
])
def test_bad_values_name_the_property(props: dict[str, str]) -> None:
    """A bad value raises ConfigError naming the property."""
    with pytest.raises(ConfigError) as err:
        build_config(props)
    assert any(key in str(err.value) for key in props)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    """An unreadable config file is a ConfigError naming the path."""
    with pytest.raises(ConfigError, match=r"nope\.properties"):
        load_config(tmp_path / "nope.properties")
