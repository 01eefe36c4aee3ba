"""The experiment loader words a bad topic config as Apache Kafka does (`harness.model.topic_configs`): CreateTopics
on Apache Kafka 3.9 (one broker, a real ZooKeeper, librdkafka's AdminClient) refuses each config below with
INVALID_CONFIG and exactly the message `config_problem` gives, and creates none of the topics."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.base import ClusterSpec
from harness.cluster.process_backend import ProcessBackend, ProcessCluster
from harness.model.topic_configs import config_problem
from harness.workload.common import LIBRDKAFKA_LOGGER
from tests.fixtures.process_cluster import APACHE_KAFKA, apache_kafka

pytestmark = [pytest.mark.integration]

BAD = {
    "t-unknown": ({"dummy.doesntexist": "1"}, "Unknown topic config name: dummy.doesntexist"),
    "t-badlong": ({"retention.ms": "abc"}, "Invalid value abc for configuration retention.ms: Not a number of type "
                                           "LONG"),
    "t-badpolicy": ({"cleanup.policy": "bogus"}, "Invalid value bogus for configuration cleanup.policy: String must "
                                                 "be one of: compact, delete"),
    "t-minisr": ({"min.insync.replicas": "0"}, "Invalid value 0 for configuration min.insync.replicas: Value must "
                                               "be at least 1"),
    "t-ratio": ({"min.cleanable.dirty.ratio": "2"}, "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: "
                                                    "Value must be no more than 1"),
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    apache_kafka()
    spec = ClusterSpec(brokers=1, zookeepers=1, ready_timeout_s=120)
    with ProcessBackend(broker=APACHE_KAFKA).up(spec, tmp_path_factory.mktemp("topic-configs")) as c:
        yield c


def test_the_loader_gives_each_bad_topic_config_the_message_kafka_refuses_it_with() -> None:
    assert {t: config_problem(cfg) for t, (cfg, _m) in BAD.items()} == {t: m for t, (_c, m) in BAD.items()}


def test_bad_topic_configs_are_refused_with_invalid_config_and_kafkas_message(cluster: ProcessCluster) -> None:
    admin = AdminClient(cast(dict[str, Any], {"bootstrap.servers": cluster.bootstrap_servers,
                                              "logger": LIBRDKAFKA_LOGGER}))
    futures = admin.create_topics([NewTopic(t, 1, 1, config=cfg) for t, (cfg, _m) in BAD.items()],
                                  operation_timeout=20)
    for topic, future in futures.items():
        with pytest.raises(KafkaException) as info:
            future.result(60)
        error = info.value.args[0]
        assert (error.code(), error.str()) == (KafkaError.INVALID_CONFIG, BAD[topic][1]), topic
    assert not set(BAD) & set(admin.list_topics(timeout=10).topics)
