"""The znode encoders/decoders agree with the JSON ZooKeeper-mode Kafka writes (literal samples)."""

from __future__ import annotations

import json

import pytest

from harness.zk import znodes as z


def _same_json(a: bytes, b: str) -> None:
    assert json.loads(a) == json.loads(b)


def test_paths_match_kafka_layout() -> None:
    assert z.broker_path(3) == "/brokers/ids/3"
    assert z.topic_path("orders") == "/brokers/topics/orders"
    assert z.partitions_path("orders") == "/brokers/topics/orders/partitions"
    assert z.partition_state_path("orders", 5) == "/brokers/topics/orders/partitions/5/state"
    assert z.delete_topic_path("orders") == "/admin/delete_topics/orders"
    assert z.isr_change_path() == "/isr_change_notification/isr_change_"
    assert z.isr_change_path("0000000007") == "/isr_change_notification/isr_change_0000000007"
    for path in (
        "/brokers/ids",
        "/brokers/topics",
        "/isr_change_notification",
        "/admin/delete_topics",
        "/config/topics",
        "/config/changes",
        "/brokers/seqid",
        "/latest_producer_id_block",
    ):
        assert path in z.PERSISTENT_PATHS


def test_controller_v1_encodes_byte_for_byte_like_kafka() -> None:
    literal = b'{"version":1,"brokerid":2,"timestamp":"1700000000123"}'
    reg = z.ControllerRegistration(2, 1700000000123)
    assert reg.encode() == literal
    assert z.ControllerRegistration.decode(literal) == reg


def test_controller_v2_carries_kraft_epoch_minus_one() -> None:
    literal = '{"version":2,"brokerid":3,"timestamp":"1680000000000","kraftControllerEpoch":-1}'
    reg = z.ControllerRegistration.decode(literal)
    assert reg == z.ControllerRegistration(3, 1680000000000, version=2, kraft_controller_epoch=-1)
    _same_json(reg.encode(), literal)


def test_controller_decode_tolerates_numeric_timestamp_and_extra_keys() -> None:
    reg = z.ControllerRegistration.decode(b'{"brokerid":1,"timestamp":17,"x":true}')
    assert (reg.broker_id, reg.timestamp_ms, reg.version) == (1, 17, 1)


@pytest.mark.parametrize("bad", [b"", b"not json", b"[1]", b'{"version":1}', b'{"brokerid":"x"}', None])
def test_controller_decode_rejects_garbage_naming_the_znode(bad: bytes | None) -> None:
    with pytest.raises(z.ZnodeDecodeError, match="/controller"):
        z.ControllerRegistration.decode(bad)


def test_controller_epoch_is_plain_decimal_text() -> None:
    assert z.encode_controller_epoch(7) == b"7"
    assert z.decode_controller_epoch(b"12") == 12
    assert z.decode_controller_epoch(b" 3\n") == 3
    with pytest.raises(z.ZnodeDecodeError, match="/controller_epoch"):
        z.decode_controller_epoch(b"{}")


BROKER_V5 = (
    '{"features":{},"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},'
    '"endpoints":["PLAINTEXT://localhost:9092"],"jmx_port":-1,"port":9092,"host":"localhost",'
    '"version":5,"timestamp":"1656000000000"}'
)


def test_broker_v5_roundtrip_matches_kafka_json() -> None:
    reg = z.BrokerRegistration.decode(1, BROKER_V5)
    assert reg.endpoints == (z.Endpoint("PLAINTEXT", "localhost", 9092, "PLAINTEXT"),)
    assert (reg.host, reg.port, reg.jmx_port, reg.version, reg.timestamp_ms) == (
        "localhost",
        9092,
        -1,
        5,
        1656000000000,
    )
    assert reg.rack is None
    _same_json(reg.encode(), BROKER_V5)


def test_broker_with_named_listeners_rack_and_features() -> None:
    literal = (
        '{"version":5,"host":"host1","port":9092,"jmx_port":9999,"timestamp":"2233345666",'
        '"endpoints":["CLIENT://host1:9093","REPLICATION://host1:9092"],"rack":"dc1",'
        '"listener_security_protocol_map":{"CLIENT":"SSL","REPLICATION":"PLAINTEXT"},'
        '"features":{"feature":{"min_version":1,"max_version":3}}}'
    )
    reg = z.BrokerRegistration.decode(4, literal)
    assert reg.endpoint("CLIENT") == z.Endpoint("CLIENT", "host1", 9093, "SSL")
    assert (reg.host, reg.port) == ("host1", 9092)  # the first PLAINTEXT endpoint
    assert reg.rack == "dc1"
    assert dict(reg.features["feature"]) == {"min_version": 1, "max_version": 3}
    _same_json(reg.encode(), literal)


def test_broker_v1_has_only_host_and_port() -> None:
    reg = z.BrokerRegistration.decode(
        0, '{"version":1,"host":"localhost","port":9092,"jmx_port":9999,"timestamp":"2233345666"}'
    )
    assert reg.endpoints == (z.Endpoint("PLAINTEXT", "localhost", 9092),)
    assert reg.jmx_port == 9999


def test_broker_without_plaintext_listener_encodes_null_host_and_port_minus_one() -> None:
    reg = z.BrokerRegistration(7, (z.Endpoint("SSL", "h", 9093, "SSL"),), timestamp_ms=1)
    obj = json.loads(reg.encode())
    assert obj["host"] is None and obj["port"] == -1 and obj["endpoints"] == ["SSL://h:9093"]


def test_broker_decode_rejects_malformed_endpoint_naming_the_broker() -> None:
    with pytest.raises(z.ZnodeDecodeError, match="/brokers/ids/2"):
        z.BrokerRegistration.decode(2, '{"version":5,"endpoints":["nonsense"],"jmx_port":-1}')


TOPIC_V3 = (
    '{"partitions":{"0":[1,2,3],"1":[2,3,1]},"topic_id":"Hn0-yQp_RaadSKgX9FPAyg",'
    '"adding_replicas":{},"removing_replicas":{},"version":3}'
)


def test_topic_v3_roundtrip() -> None:
    a = z.TopicAssignment.decode("orders", TOPIC_V3)
    assert a.replicas(0) == (1, 2, 3) and a.replicas(1) == (2, 3, 1) and a.replicas(9) == ()
    assert a.topic_id == "Hn0-yQp_RaadSKgX9FPAyg" and a.version == 3
    _same_json(a.encode(), TOPIC_V3)


def test_topic_v1_and_v2_with_reassignment_in_flight() -> None:
    v1 = z.TopicAssignment.decode("t", '{"version":1,"partitions":{"0":[0,1]}}')
    assert dict(v1.partitions) == {0: (0, 1)} and v1.version == 1
    _same_json(v1.encode(), '{"version":1,"partitions":{"0":[0,1]}}')
    v2 = z.TopicAssignment.decode(
        "t",
        '{"version":2,"partitions":{"0":[1,2,3,4]},"adding_replicas":{"0":[4]},"removing_replicas":{"0":[1]}}',
    )
    assert dict(v2.adding_replicas) == {0: (4,)} and dict(v2.removing_replicas) == {0: (1,)}
    assert json.loads(v2.encode())["adding_replicas"] == {"0": [4]}


def test_partition_state_roundtrip_and_key_order() -> None:
    literal = '{"controller_epoch":12,"leader":0,"version":1,"leader_epoch":0,"isr":[0,1]}'
    st = z.PartitionState.decode(literal)
    assert st == z.PartitionState(leader=0, leader_epoch=0, isr=(0, 1), controller_epoch=12)
    assert st.encode() == literal.encode()


def test_partition_state_leader_recovery_state_only_when_recovering() -> None:
    literal = '{"controller_epoch":3,"leader":2,"version":1,"leader_epoch":5,"isr":[2],"leader_recovery_state":1}'
    st = z.PartitionState.decode(literal)
    assert st.leader_recovery_state == z.LEADER_RECOVERING
    assert st.encode() == literal.encode()
    assert "leader_recovery_state" not in json.loads(z.PartitionState(-1, 6, (), 3).encode())


def test_partition_state_rejects_missing_isr() -> None:
    with pytest.raises(z.ZnodeDecodeError, match="isr"):
        z.PartitionState.decode('{"controller_epoch":1,"leader":1,"leader_epoch":0}')


def test_isr_change_notification_and_preferred_election() -> None:
    literal = '{"version":1,"partitions":[{"topic":"orders","partition":0},{"topic":"orders","partition":3}]}'
    n = z.IsrChangeNotification.decode(literal)
    assert n.partitions == (("orders", 0), ("orders", 3))
    assert n.encode() == literal.encode()
    p = z.PreferredReplicaElection.decode(literal)
    assert p.partitions == n.partitions and p.encode() == literal.encode()


def test_reassign_partitions_legacy_json() -> None:
    literal = '{"version":1,"partitions":[{"topic":"foo","partition":1,"replicas":[1,2,3]}]}'
    r = z.ReassignPartitions.decode(literal)
    assert r.assignments == (("foo", 1, (1, 2, 3)),)
    assert r.encode() == literal.encode()


def test_cluster_id_version_is_a_string() -> None:
    literal = '{"version":"1","id":"wN5QbCA9TwWs0g-4Cbs0Jw"}'
    assert z.decode_cluster_id(literal) == "wN5QbCA9TwWs0g-4Cbs0Jw"
    assert z.encode_cluster_id("wN5QbCA9TwWs0g-4Cbs0Jw") == literal.encode()
