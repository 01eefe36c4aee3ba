"""Topic configs and keyless records on compacted topics, on Apache Kafka 3.9 and on the reference broker
alike (one broker and a real ZooKeeper each, librdkafka clients): CreateTopics refuses an unknown config
name or a bad value with INVALID_CONFIG and Kafka's message; a compacted topic refuses a record without
a key with INVALID_RECORD, and takes keyed records and tombstones."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.base import ClusterSpec
from harness.cluster.process import ProcessCluster
from harness.workload.common import LIBRDKAFKA_LOGGER
from tests.fixtures.process_cluster import FLAVOURS, flavour_backend

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
COMPACTED = "t-compacted"


@pytest.fixture(scope="module", params=FLAVOURS)
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    spec = ClusterSpec(brokers=1, zookeepers=1, ready_timeout_s=120)
    with flavour_backend(request.param).up(spec, tmp_path_factory.mktemp(request.param)) as c:
        yield c


def _config(cluster: ProcessCluster) -> dict[str, Any]:
    return {"bootstrap.servers": cluster.bootstrap_servers, "logger": LIBRDKAFKA_LOGGER}


def test_bad_topic_configs_are_refused_with_invalid_config_and_kafkas_message(cluster: ProcessCluster) -> None:
    admin = AdminClient(cast(dict[str, Any], _config(cluster)))
    futures = admin.create_topics([NewTopic(t, 1, 1, config=cfg) for t, (cfg, _m) in BAD.items()],
                                  operation_timeout=20)
    for topic, future in futures.items():
        with pytest.raises(KafkaException) as info:
            future.result(60)
        error = info.value.args[0]
        assert (error.code(), error.str()) == (KafkaError.INVALID_CONFIG, BAD[topic][1]), topic
    assert not set(BAD) & set(admin.list_topics(timeout=10).topics)


def test_a_compacted_topic_refuses_a_record_without_a_key_and_takes_keyed_ones_and_tombstones(
    cluster: ProcessCluster,
) -> None:
    admin = AdminClient(cast(dict[str, Any], _config(cluster)))
    admin.create_topics([NewTopic(COMPACTED, 1, 1, config={"cleanup.policy": "compact"})],
                        operation_timeout=20)[COMPACTED].result(60)
    producer = Producer(cast(dict[str, Any], {**_config(cluster), "message.send.max.retries": 2,
                                              "topic.metadata.refresh.interval.ms": 500}))
    outcomes: dict[str, Any] = {}
    for name, key, value in (("keyed", b"k", b"v"), ("keyless", None, b"v"), ("tombstone", b"k", None),
                             ("keyed again", b"k2", b"v")):
        producer.produce(COMPACTED, key=key, value=value,
                         on_delivery=lambda err, _msg, name=name: outcomes.__setitem__(name, err))
        assert producer.flush(60) == 0, name
    assert {n: (e.code() if e else None) for n, e in outcomes.items()} == {
        "keyed": None, "keyless": KafkaError.INVALID_RECORD, "tombstone": None, "keyed again": None}
