"""`cluster.security`: the per-run certificates and users (`harness.cluster.security`), each node's properties,
each client library's settings (`harness.cluster.client_security`), and what `validate` refuses. The brokers that
read these files run in tests/integration/process_backend/test_secured_cluster_on_apache_kafka.py."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from harness.cluster.base import SecuritySpec
from harness.cluster.client_security import PLAINTEXT, ClientSecurity, Credentials
from harness.cluster.render import protocol_map
from harness.cluster.security import issue
from harness.errors import ValidationError
from harness.experiment import load_experiment_text
from harness.history.nodes import NodeId

NODES = (NodeId.broker(1), NodeId.broker(2), NodeId.controller(101), NodeId.zookeeper(1))


def test_issue_writes_a_ca_and_one_private_pkcs8_key_store_per_kafka_node(tmp_path: Path) -> None:
    sec = issue(SecuritySpec(tls=True, sasl="scram-sha-512"), tmp_path / "security", NODES, kraft=True)
    assert sec.ca_file.read_text().startswith("-----BEGIN CERTIFICATE-----")
    stores = sorted(p.name for p in sec.directory.glob("*.pem") if p.name != "ca.pem")
    assert stores == ["broker-1.pem", "broker-2.pem", "client.pem", "controller-101.pem"]  # no ZooKeeper
    text = sec.keystore(NodeId.broker(1)).read_text()
    assert text.startswith("-----BEGIN PRIVATE KEY-----") and text.count("BEGIN CERTIFICATE") >= 1
    assert stat.S_IMODE(sec.keystore(NodeId.broker(1)).stat().st_mode) == 0o600
    assert stat.S_IMODE(sec.directory.stat().st_mode) == 0o700
    assert sec.admin.password != sec.client.password and "password" not in repr(sec.admin).replace("username", "")


def test_a_scram_broker_gets_its_stores_a_jaas_entry_per_listener_and_the_authorizer(tmp_path: Path) -> None:
    sec = issue(SecuritySpec(tls=True, sasl="scram-sha-512", authorizer=True), tmp_path, NODES[:1], kraft=False)
    props = sec.node_properties(NodeId.broker(1), ["FROM1", "EXTERNAL"], [])
    assert props["ssl.keystore.type"] == props["ssl.truststore.type"] == "PEM"
    assert props["sasl.mechanism.inter.broker.protocol"] == "SCRAM-SHA-512"
    jaas = props["listener.name.external.scram-sha-512.sasl.jaas.config"]
    assert jaas.startswith("org.apache.kafka.common.security.scram.ScramLoginModule required username=\"admin\"")
    assert props["authorizer.class.name"] == "kafka.security.authorizer.AclAuthorizer"
    assert props["super.users"] == "User:admin"
    assert sec.protocol == "SASL_SSL" and protocol_map(["FROM1"], sec) == "FROM1:SASL_SSL"
    assert sec.zookeeper_scram_args("127.0.0.1:2181")[1][-4:] == ["--entity-type", "users", "--entity-name",
                                                                   "client"]


def test_kraft_controller_listeners_use_plain_whatever_the_brokers_use(tmp_path: Path) -> None:
    sec = issue(SecuritySpec(sasl="scram-sha-512", authorizer=True), tmp_path, NODES[2:3], kraft=True)
    props = sec.node_properties(NodeId.controller(101), [], ["CTRL101"])
    assert props["sasl.mechanism.controller.protocol"] == "PLAIN"
    assert props["listener.name.ctrl101.sasl.enabled.mechanisms"] == "PLAIN"
    assert f'user_admin="{sec.admin.password}"' in props["listener.name.ctrl101.plain.sasl.jaas.config"]
    assert "sasl.mechanism.inter.broker.protocol" not in props and "ssl.keystore.location" not in props
    assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert protocol_map([], sec, ["CTRL101"]) == "CTRL101:SASL_PLAINTEXT"
    assert sec.format_scram_args()[:2] == ["--add-scram", f"SCRAM-SHA-512=[name=admin,password={sec.admin.password}]"]


def test_plain_users_live_in_the_jaas_entry_and_need_no_scram_bootstrap(tmp_path: Path) -> None:
    sec = issue(SecuritySpec(sasl="plain"), tmp_path, NODES[:1], kraft=False)
    jaas = sec.node_properties(NodeId.broker(1), ["FROM1"], [])["listener.name.from1.plain.sasl.jaas.config"]
    assert f'user_client="{sec.client.password}"' in jaas
    assert sec.scram_users() == () and sec.format_scram_args() == []


def test_each_client_library_gets_the_same_access_in_its_own_names() -> None:
    access = ClientSecurity("SASL_SSL", "/run/ca.pem", "SCRAM-SHA-512", Credentials("client", "s3cret"))
    assert access.librdkafka() == {"security.protocol": "sasl_ssl", "ssl.ca.location": "/run/ca.pem",
                                   "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "client",
                                   "sasl.password": "s3cret"}
    java = access.java()
    assert java["ssl.truststore.type"] == "PEM" and java["sasl.mechanism"] == "SCRAM-SHA-512"
    assert java["sasl.jaas.config"].endswith('username="client" password="s3cret";')
    assert access.kafka_python()["sasl_plain_password"] == "s3cret"
    assert ClientSecurity("SASL_PLAINTEXT", None, "PLAIN", Credentials("c", "p")).ssl_context() is None
    assert "s3cret" not in repr(access)
    assert access.with_password("new").librdkafka()["sasl.password"] == "new"
    assert PLAINTEXT.librdkafka() == PLAINTEXT.java() == PLAINTEXT.kafka_python() == {}


HEAD = """name: s
cluster:
  brokers: 3
  {cluster}
topics: [{{name: t, partitions: 1, replication_factor: 3}}]
workload: {{producers: [{{id: p0, topic: t}}]}}
duration: 30s
schedule: [{schedule}]
"""


def problems(cluster: str, schedule: str = "") -> list[str]:
    with pytest.raises(ValidationError) as info:
        load_experiment_text(HEAD.format(cluster=cluster, schedule=schedule), "s.yaml")
    return [p.render() for p in info.value.problems]


def test_a_secured_cluster_loads_into_its_spec() -> None:
    exp = load_experiment_text(HEAD.format(cluster="security: {tls: true, sasl: scram-sha-512, authorizer: true}",
                                           schedule="{at: 5s, fault: credential_rotation, target: producer:p0, "
                                                    "duration: 5s}"), "s.yaml")
    assert exp.cluster.security == SecuritySpec(tls=True, sasl="scram-sha-512", authorizer=True)
    assert exp.cluster.security.describe() == "TLS+SASL/SCRAM-SHA-512+ACLs"


@pytest.mark.parametrize(("cluster", "schedule", "fragment"), [
    ("security: {sasl: kerberos}", "", "cluster.security.sasl: sasl is one of scram-sha-512, plain"),
    ("security: {tls: true, authorizer: true}", "", "cluster.security.authorizer: ACLs need principals"),
    ("security: {tls: yes please}", "", "cluster.security.tls: must be true or false"),
    ('mode: kraft\n  kafka: "3.4"\n  controllers: 1\n  security: {sasl: scram-sha-512}', "",
     "cluster.security.sasl: Apache Kafka 3.4.0 has no SCRAM credentials in KRaft"),
    ("security: {tls: true, sasl: plain}", "{at: 5s, fault: credential_rotation, target: producer:p0, duration: 5s}",
     "schedule[0].fault: credential_rotation changes a SCRAM password"),
])
def test_validate_refuses_a_security_it_cannot_build_naming_the_field(cluster: str, schedule: str,
                                                                     fragment: str) -> None:
    found = problems(cluster, schedule)
    assert any(fragment in p and p.startswith("s.yaml:") for p in found), found
