"""`cluster.security` on the containers backend without a Docker engine: the certificates name what the nodes dial
inside the network, every node's rendered properties speak the run's protocol and find their stores at a read-only
mount of the run's security directory, KRaft's storage format adds the SCRAM users, a published image is refused
before anything starts, and `auto` keeps a secured cluster on the process backend while `--backend containers`
runs it. The secured containers run itself is tests/nightly/test_secured_failover_on_containers.py."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest
from cryptography import x509

from harness.cluster.base import ClusterSpec, NodeId, SecuritySpec
from harness.cluster.containers_kraft import format_spec, kraft_container_topology, kraft_node_spec
from harness.cluster.containers_security import check_images, secure
from harness.cluster.containers_spec import (
    RoleImage,
    broker_launcher,
    broker_spec,
    container_topology,
    local_kafka_role,
    resolve_images,
)
from harness.cluster.process_flavour import BrokerLauncher
from harness.cluster.render import parse_properties
from harness.cluster.select import choose_backend, prefers_process
from harness.errors import BackendError, ConfigError
from tests.unit.containers_backend.test_kraft import _decide, _kafka_home, _local
from tests.unit.containers_backend.test_kraft import _spec as _kraft_spec

HOST = "10.88.0.1"
CLIENT_PORTS = {1: 41001, 2: 41002, 3: 41003}
LABELS = {"kafka-chaos.run": "r1", "kafka-chaos.owner": "h/1/0.0"}
SECURED = SecuritySpec(tls=True, sasl="scram-sha-512", authorizer=True)


def _zk_spec(**kw: object) -> ClusterSpec:
    base: dict[str, object] = {"brokers": 3, "zookeepers": 1, "kafka_version": "3.9.2", "broker": "apache-kafka",
                               "security": SECURED, "broker_config": MappingProxyType({"min.insync.replicas": "2"})}
    base.update(kw)
    return ClusterSpec(**base)  # type: ignore[arg-type]


def _decide_zk(spec: ClusterSpec, tmp_path: Path) -> tuple[dict[str, RoleImage], BrokerLauncher | None]:
    """The local images of ZooKeeper mode with a Kafka 3.9 install (an empty stand-in, nothing runs)."""
    env = {**_local(tmp_path), "KAFKA_HOME": str(_kafka_home(tmp_path, "3.9.2"))}
    images = resolve_images(spec, env)
    launcher = broker_launcher(images["kafka"], spec, env, java="/usr/bin/java")
    images["kafka"] = local_kafka_role(images["kafka"], launcher)
    return images, launcher


def _names(pem: Path) -> set[str]:
    cert = x509.load_pem_x509_certificate(pem.read_bytes().split(b"-----END PRIVATE KEY-----\n", 1)[1])
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return {str(v) for v in san.get_values_for_type(x509.DNSName)} | \
        {str(v) for v in san.get_values_for_type(x509.IPAddress)}


def test_certificates_name_the_host_the_toxiproxy_container_and_each_nodes_alias(tmp_path: Path) -> None:
    spec = _zk_spec()
    nodes = (NodeId.zookeeper(1), NodeId.broker(1), NodeId.broker(2), NodeId.broker(3))
    sec = secure(spec, tmp_path, nodes, HOST)
    assert sec is not None and sec.directory == tmp_path / "security"
    names = _names(sec.keystore(NodeId.broker(2)))
    assert {"127.0.0.1", "localhost", HOST, "toxiproxy", "broker1", "broker2", "broker3"} <= names
    assert not any(n.startswith("zk") for n in names)
    assert secure(_zk_spec(security=SecuritySpec()), tmp_path / "plain", nodes, HOST) is None


def test_a_secured_broker_container_speaks_sasl_ssl_and_mounts_the_certificates_read_only(tmp_path: Path) -> None:
    spec = _zk_spec()
    images, launcher = _decide_zk(spec, tmp_path)
    sec = secure(spec, tmp_path, (NodeId.broker(k) for k in (1, 2, 3)), HOST)
    topo = container_topology(3, 1, HOST, CLIENT_PORTS)
    b = broker_spec(spec, images["kafka"], topo, 2, "kc-r1-broker2", LABELS, launcher, sec)
    props = parse_properties(b.files["server.properties"])
    assert props["listener.security.protocol.map"] == "FROM1:SASL_SSL,FROM2:SASL_SSL,FROM3:SASL_SSL,EXTERNAL:SASL_SSL"
    assert sec is not None and props["ssl.keystore.location"] == str(sec.keystore(NodeId.broker(2)))
    assert props["authorizer.class.name"] == "kafka.security.authorizer.AclAuthorizer"
    where = str(sec.directory.resolve())
    assert [(m.host, m.container, m.mode) for m in b.mounts if m.host == where] == [(where, where, "ro")]
    plain = broker_spec(spec, images["kafka"], topo, 2, "kc-r1-broker2", LABELS, launcher)
    assert "ssl.keystore.location" not in plain.files["server.properties"]
    assert not any(m.host == where for m in plain.mounts)


def test_kraft_nodes_mount_the_certificates_and_the_format_adds_the_scram_users(tmp_path: Path) -> None:
    spec = _kraft_spec(security=SECURED)
    images, launcher = _decide(spec, _local(tmp_path))
    topo = kraft_container_topology(spec, HOST, CLIENT_PORTS)
    sec = secure(spec, tmp_path, (NodeId.controller(101), NodeId.broker(1)), HOST)
    assert sec is not None and "controller101" in _names(sec.keystore(NodeId.controller(101)))
    node = kraft_node_spec(spec, images["kafka"], topo, NodeId.controller(101), "kc-r1-controller101", LABELS,
                           launcher, tmp_path / "controller-101", {9311: 45001}, sec)
    props = parse_properties(node.files["server.properties"])
    assert props["sasl.mechanism.controller.protocol"] == "PLAIN"
    assert props["authorizer.class.name"] == "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
    assert any(m.host == str(sec.directory.resolve()) and m.mode == "ro" for m in node.mounts)
    f = format_spec(node, "7o5G8CBoiIjsffU9cw8_xA", launcher, security=sec)
    assert f.command is not None
    scram = [f.command[i + 1] for i, a in enumerate(f.command) if a == "--add-scram"]
    assert [s.split("[name=")[1].split(",")[0] for s in scram] == ["admin", "client"]
    assert all(s.startswith("SCRAM-SHA-512=") for s in scram)


def test_a_published_kafka_image_is_refused_for_a_secured_cluster_naming_the_fix() -> None:
    spec = _zk_spec(kafka_version="7.7.1", broker="auto")
    with pytest.raises(ConfigError, match=r"local Kafka image.*confluentinc/cp-kafka:7.7.1.*KAFKA_CHAOS_LOCAL_IMAGES"):
        check_images(spec, resolve_images(spec, {}))
    check_images(_zk_spec(security=SecuritySpec(), kafka_version="7.7.1"), resolve_images(spec, {}))  # plaintext
    check_images(spec, resolve_images(spec, {"KAFKA_CHAOS_LOCAL_IMAGES": "1"}))


def test_auto_keeps_a_secured_cluster_on_the_process_backend_and_containers_is_not_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    prefer = prefers_process(_zk_spec())
    assert prefer.startswith("cluster.security (") and prefers_process(_zk_spec(security=SecuritySpec())) == ""
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    with pytest.raises(BackendError, match="needs a Docker API"):  # asked for, and only the engine is missing
        choose_backend("containers", prefer_process=prefer)
    backend, reason = choose_backend("auto", prefer_process=prefer)
    assert type(backend).__name__ == "ProcessBackend" and "unless --backend containers" in reason

