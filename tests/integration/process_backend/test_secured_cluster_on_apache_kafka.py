"""A secured cluster on Apache Kafka 3.9 (process backend, 3 brokers, real ZooKeeper): TLS on every listener,
SASL/SCRAM-SHA-512 users made in ZooKeeper before the brokers start, and the ACL authorizer. The harness's users
connect the way the run's parts do (librdkafka with the admin's and the workloads' settings, the observers' own wire
client with TLS and SCRAM, kafka-python's admin client), a client without the CA or with a wrong password is
refused, and `credential_rotation` does what Kafka's docs say: an open connection goes on, a new one with the old
password fails until the heal. KRaft's side (PLAIN controller listeners, `--add-scram`) runs in
experiments/secured-failover.yaml's kraft variant (nightly)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import AdminClient

from harness.cluster.base import ClusterSpec, SecuritySpec, client_access
from harness.cluster.process_backend import ProcessBackend, ProcessCluster
from harness.faults.credential_faults import set_password
from harness.faults.kafka_operator import _FreshClient
from harness.observe.kafka_wire import NodeConnection
from tests.fixtures.process_cluster import APACHE_KAFKA, apache_kafka
from tests.integration.workload.support import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(scope="module")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    apache_kafka()
    spec = ClusterSpec(brokers=3, zookeepers=1, ready_timeout_s=150, broker=APACHE_KAFKA,
                       security=SecuritySpec(tls=True, sasl="scram-sha-512", authorizer=True),
                       broker_config={"zookeeper.session.timeout.ms": "6000", "offsets.topic.num.partitions": "3"})
    with ProcessBackend(broker=APACHE_KAFKA).up(spec, tmp_path_factory.mktemp("secured-kafka")) as cluster:
        yield cluster


def _admin(kafka: ProcessCluster, **settings: Any) -> AdminClient:
    return AdminClient({"bootstrap.servers": kafka.bootstrap_servers, "socket.timeout.ms": 5000, **settings})


def _connects(kafka: ProcessCluster, settings: dict[str, str]) -> bool:
    """Whether a new client with `settings` gets a Metadata answer."""
    try:
        return bool(_admin(kafka, **settings).list_topics(timeout=5).brokers)
    except KafkaException:
        return False


def test_every_kind_of_harness_client_connects_over_tls_and_scram(kafka: ProcessCluster) -> None:
    admin, client = client_access(kafka, "admin"), client_access(kafka, "client")
    assert (admin.protocol, admin.mechanism, client.user and client.user.username) == (
        "SASL_SSL", "SCRAM-SHA-512", "client")
    assert sorted(_admin(kafka, **admin.librdkafka()).list_topics(timeout=15).brokers) == [1, 2, 3]
    assert sorted(_admin(kafka, **client.librdkafka()).list_topics(timeout=15).brokers) == [1, 2, 3]
    # the observers' wire client (TLS + kafka-python's SCRAM), straight to a broker's own listener
    from kafka.protocol.metadata import MetadataRequest, MetadataResponse

    conn = NodeConnection(1, kafka.broker_addresses[1], timeout_s=5.0, client_id="test", security=admin)
    try:
        answer = conn.call(MetadataRequest, MetadataResponse, 4, lambda v: MetadataRequest(
            version=v, topics=[], allow_auto_topic_creation=False))
        assert int(answer.controller_id) in (1, 2, 3)
    finally:
        conn.close()
    assert _FreshClient(kafka.bootstrap_servers, admin).get().describe_cluster()["brokers"]  # kafka-python


def test_a_client_without_the_ca_or_the_password_is_refused(kafka: ProcessCluster) -> None:
    settings = client_access(kafka, "client").librdkafka()
    without_ca = {k: v for k, v in settings.items() if k != "ssl.ca.location"}
    assert not _connects(kafka, without_ca)
    assert not _connects(kafka, {**settings, "sasl.password": "wrong"})


def test_credential_rotation_refuses_new_connections_with_the_old_password_until_the_heal(
    kafka: ProcessCluster,
) -> None:
    admin, client = client_access(kafka, "admin"), client_access(kafka, "client")
    assert client.user is not None
    old, rotated = client.librdkafka(), client.with_password("rotated-password").librdkafka()
    producer = Producer({"bootstrap.servers": kafka.bootstrap_servers, **old})
    producer.produce("rotation", b"before")
    assert producer.flush(30) == 0  # open connections (the ACLs let `client` create the topic on first use)
    set_password(admin, kafka.bootstrap_servers, client, "rotated-password")
    try:  # every broker applies the change when ZooKeeper notifies it (/config/changes)
        wait_until(lambda: _connects(kafka, rotated) and not _connects(kafka, old), 60.0,
                   "the new password accepted and the old refused", lambda: "not yet")
        producer.produce("rotation", b"during")
        assert producer.flush(30) == 0, "the producer's open connections went on"
    finally:
        set_password(admin, kafka.bootstrap_servers, client, client.user.password)
    wait_until(lambda: _connects(kafka, old), 60.0, "the old password accepted again", lambda: "refused")
