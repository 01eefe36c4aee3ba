"""KRaft on the containers backend without a Docker engine: the container-side topology (per-dialer controller
listeners, the quorum proxies on the toxiproxy container), each node's container spec and rendered properties,
the one-off storage-format container, what is refused before any container starts, and the node and link
operations on controllers (recording stand-ins for the Docker container objects and the Toxiproxy API)."""

from __future__ import annotations

from pathlib import Path
from types import MappingProxyType

import pytest

from harness.cluster.base import CLIENT, ClusterSpec, LinkGroup, NodeId
from harness.cluster.containers import ContainersBackend, ContainersCluster
from harness.cluster.containers_kraft import (
    KraftContainers,
    check_kraft_spec,
    controller_port,
    format_spec,
    kraft_container_topology,
    kraft_images,
    kraft_node_spec,
    quorum_proxy_port,
)
from harness.cluster.containers_spec import LABEL_NODE, RoleImage, broker_launcher, local_kafka_role, resolve_images
from harness.cluster.process_flavour import BrokerLauncher
from harness.cluster.render import parse_properties, plan_routes
from harness.errors import ConfigError
from tests.unit.containers_backend.test_operations import RecordingDockerContainer, RecordingToxiproxy, _Tc

HOST = "127.0.0.1"
CLIENT_PORTS = {1: 41001, 2: 41002, 3: 41003}
LABELS = {"kafka-chaos.run": "r1", "kafka-chaos.owner": "h/1/0.0"}
C101, C102, C103 = NodeId.controller(101), NodeId.controller(102), NodeId.controller(103)
B1, B2, B3 = NodeId.broker(1), NodeId.broker(2), NodeId.broker(3)


def _spec(**kw: object) -> ClusterSpec:
    base: dict[str, object] = {"brokers": 3, "zookeepers": 0, "mode": "kraft", "controllers": 3,
                               "kafka_version": "4.1.2", "broker": "apache-kafka",
                               "broker_config": MappingProxyType({"min.insync.replicas": "2"})}
    base.update(kw)
    return ClusterSpec(**base)  # type: ignore[arg-type]


def _kafka_home(tmp_path: Path, version: str = "4.1.2") -> Path:
    """A directory shaped like a Kafka install (empty jars, no real Kafka)."""
    home = tmp_path / f"kafka-{version}"
    (home / "libs").mkdir(parents=True)
    (home / "config").mkdir()
    (home / "config" / "log4j2.yaml").write_text("Configuration: {}\n")
    for name in (f"kafka_2.13-{version}.jar", f"kafka-clients-{version}.jar"):
        (home / "libs" / name).write_bytes(b"")
    return home


def _local(tmp_path: Path) -> dict[str, str]:
    """Local images and a Kafka 4 install in KAFKA_HOME; nothing can be installed (no mvn, unreachable mirror)."""
    return {"KAFKA_CHAOS_LOCAL_IMAGES": "1", "PATH": "/nonexistent", "KAFKA_CHAOS_CACHE": str(tmp_path / "cache"),
            "KAFKA_CHAOS_APACHE_MIRROR": "http://127.0.0.1:9", "KAFKA_HOME": str(_kafka_home(tmp_path))}


def _decide(spec: ClusterSpec, env: dict[str, str]) -> tuple[dict[str, RoleImage], BrokerLauncher]:
    images = resolve_images(spec, env)
    launcher = broker_launcher(images["kafka"], spec, env, java="/usr/bin/java")
    images["kafka"] = local_kafka_role(images["kafka"], launcher)
    images = kraft_images(images, launcher)
    assert launcher is not None
    return images, launcher


def test_every_quorum_link_is_a_proxy_on_the_toxiproxy_container_to_the_dialers_own_listener() -> None:
    topo = kraft_container_topology(_spec(), HOST, CLIENT_PORTS)
    assert {p.name for p in topo.proxies} == {r.name for r in plan_routes(topo.brokers, (), topo.controllers)}
    assert len(topo.proxies) == 3 * 2 + 3 + 3 * 3 + 3 * 2  # data, client, broker->voter, voter->voter
    assert len({p.listen.port for p in topo.proxies}) == len(topo.proxies)  # one container port per proxy
    p = topo.proxy(B1, C101)
    assert (str(p.listen), str(p.upstream), str(p.advertised)) == ("0.0.0.0:22101", "controller101:9301",
                                                                   "toxiproxy:22101")
    q = topo.proxy(C102, C103)
    assert (str(q.upstream), str(q.advertised)) == ("controller103:9312", f"toxiproxy:{quorum_proxy_port(C102, C103)}")
    assert str(topo.proxy(CLIENT, B2).advertised) == "127.0.0.1:41002"
    assert topo.bootstrap_servers == "127.0.0.1:41001,127.0.0.1:41002,127.0.0.1:41003"
    # every voter has one controller listener per dialer (the brokers and the dedicated controllers)
    assert {c.node for c in topo.controllers} == {C101, C102, C103}
    assert all(dict(c.ports) == {d: controller_port(d) for d in (B1, B2, B3, C101, C102, C103)}
               for c in topo.controllers)
    assert {k: str(v) for k, v in topo.voter_addresses(B3).items()} == {
        101: "toxiproxy:22301", 102: "toxiproxy:22302", 103: "toxiproxy:22303"}
    assert str(topo.voter_addresses(C101)[101]) == "controller101:9311"  # a voter reaches itself directly


def test_combined_voters_quorum_links_are_a_second_proxy_beside_the_data_link() -> None:
    topo = kraft_container_topology(_spec(combined=True), HOST, CLIENT_PORTS)
    assert {c.node for c in topo.controllers} == {B1, B2, B3}
    quorum = {p.name: p for p in topo.proxies if p.name.endswith(".quorum")}
    assert set(quorum) == {f"{k}->{j}.quorum" for k in (1, 2, 3) for j in (1, 2, 3) if k != j}
    assert (str(quorum["1->2.quorum"].upstream), quorum["1->2.quorum"].listen.port) == ("broker2:9301", 24102)
    assert [p.name for p in topo.proxies_between(B1, B2)] == ["1->2", "1->2.quorum"]


def test_controller_container_runs_kafka_on_its_rendered_file_with_its_data_bind_mounted(tmp_path: Path) -> None:
    spec = _spec()
    images, launcher = _decide(spec, _local(tmp_path))
    assert "zookeeper" not in images and images["kafka"].image == "localhost/kafka-chaos-kafka:4.1.2"
    topo = kraft_container_topology(spec, HOST, CLIENT_PORTS)
    node_dir = tmp_path / "controller-101"
    c = kraft_node_spec(spec, images["kafka"], topo, C101, "kc-r1-controller101", LABELS, launcher, node_dir,
                        {9311: 45001})
    assert c.alias == "controller101" and c.node == "controller:101" and c.labels[LABEL_NODE] == "controller:101"
    assert c.command is not None and c.command[-4:] == ("-cp", "/opt/kafka/libs/*", "kafka.Kafka",
                                                        "/conf/server.properties")
    assert c.published == {9311: 45001} and c.exposed == () and c.conf_mount and c.logs_mount
    data = [m for m in c.mounts if m.container == "/data/kafka"]
    assert [(m.host, m.mode) for m in data] == [(str(node_dir.resolve() / "data"), "rw")]
    assert all(m.mode == "ro" for m in c.mounts if m.container != "/data/kafka")
    props = parse_properties(c.files["server.properties"])
    assert props["process.roles"] == "controller" and props["node.id"] == "101"
    assert props["controller.quorum.voters"] == ("101@controller101:9311,102@toxiproxy:23102,"
                                                 "103@toxiproxy:23103")
    assert props["controller.listener.names"].split(",")[0] == "CTRL101"
    assert "CTRL1://0.0.0.0:9301" in props["listeners"] and "CTRL1://toxiproxy:22101" in props["advertised.listeners"]
    assert props["log.dirs"] == "/data/kafka"


def test_broker_container_dials_each_voter_through_its_own_proxy(tmp_path: Path) -> None:
    spec = _spec()
    images, launcher = _decide(spec, _local(tmp_path))
    topo = kraft_container_topology(spec, HOST, CLIENT_PORTS)
    b = kraft_node_spec(spec, images["kafka"], topo, B2, "kc-r1-broker2", LABELS, launcher, tmp_path / "broker-2",
                        {9092: 45002})
    props = parse_properties(b.files["server.properties"])
    assert props["process.roles"] == "broker" and props["node.id"] == "2"
    assert props["controller.quorum.voters"] == "101@toxiproxy:22201,102@toxiproxy:22202,103@toxiproxy:22203"
    assert props["controller.listener.names"] == "CTRL2" and props["inter.broker.listener.name"] == "FROM2"
    assert props["advertised.listeners"].endswith("EXTERNAL://127.0.0.1:41002")
    assert props["min.insync.replicas"] == "2" and b.published == {9092: 45002} and b.alias == "broker2"


def test_storage_format_runs_in_a_one_off_container_of_the_same_image_and_mounts(tmp_path: Path) -> None:
    spec = _spec()
    images, launcher = _decide(spec, _local(tmp_path))
    topo = kraft_container_topology(spec, HOST, CLIENT_PORTS)
    node = kraft_node_spec(spec, images["kafka"], topo, C102, "kc-r1-controller102", LABELS, launcher,
                           tmp_path / "controller-102", {9312: 45003})
    f = format_spec(node, "7o5G8CBoiIjsffU9cw8_xA", launcher)
    assert f.command is not None and f.command[-7:] == (
        "kafka.tools.StorageTool", "format", "-t", "7o5G8CBoiIjsffU9cw8_xA", "-c", "/conf/server.properties",
        "--ignore-formatted")
    assert "-cp" in f.command and f.command[f.command.index("-cp") + 1] == "/opt/kafka/libs/*"
    assert (f.image, f.mounts, f.conf_mount, f.logs_mount) == (node.image, node.mounts, True, True)
    assert f.published == {} and f.exposed == () and f.files == {}
    assert f.name == "kc-r1-controller102-format" and f.labels["kafka-chaos.run"] == "r1"


def test_what_kraft_refuses_before_any_container_starts(tmp_path: Path) -> None:
    for bad in (_spec(controllers=2), _spec(brokers=0), _spec(combined=True, controllers=5)):
        with pytest.raises(ConfigError, match="controllers 1, 3 or 5"):
            check_kraft_spec(bad)
    with pytest.raises(ConfigError, match="local Kafka image"):  # a published image runs ZooKeeper mode here
        ContainersBackend(environ={}).up(_spec(), tmp_path)
    with pytest.raises(ConfigError, match="reference broker was retired"):
        _decide(_spec(broker="reference"), _local(tmp_path))


def _cluster(tmp_path: Path, calls: list[str], monkeypatch: pytest.MonkeyPatch,
             spec: ClusterSpec | None = None) -> ContainersCluster:
    spec = spec or _spec()
    images, launcher = _decide(spec, _local(tmp_path))
    cluster = ContainersCluster(spec, tmp_path, images, backend=ContainersBackend(environ={}, stop_timeout_s=7),
                                launcher=launcher)
    cluster._kraft = KraftContainers(spec, images["kafka"], launcher, labels=cluster.labels, prefix="kc-r1",
                                     workdir=tmp_path, host_ip=HOST, client_ports=CLIENT_PORTS,
                                     containers=cluster._containers, network=None, stop_timeout_s=7)
    cluster.topology = cluster._kraft.topology
    for nc in cluster._containers.values():
        nc._tc = _Tc(RecordingDockerContainer(calls, nc.spec.name))
    cluster._toxi_client = RecordingToxiproxy(calls)  # type: ignore[assignment]
    monkeypatch.setattr(KraftContainers, "wait_ready", lambda self, node, deadline: calls.append(f"ready {node}"))
    return cluster


def test_controllers_are_nodes_with_direct_addresses_on_fixed_published_ports(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    c = _cluster(tmp_path, [], monkeypatch)
    assert c.nodes == (B1, B2, B3, C101, C102, C103) and set(c._containers) == set(c.nodes)
    kraft = c._kraft
    assert kraft is not None and kraft.order == (C101, C102, C103, B1, B2, B3)  # controllers start first
    for v in (101, 102, 103):
        published = c._containers[NodeId.controller(v)].spec.published
        assert list(published) == [9310 + v - 100] and kraft.quorum_voters[v] == f"{HOST}:{published[9310 + v - 100]}"
    for k in (1, 2, 3):
        assert kraft.broker_addresses[k] == f"{HOST}:{c._containers[NodeId.broker(k)].spec.published[9092]}"
    ports = [p for nc in c._containers.values() for p in nc.spec.published.values()]
    assert len(set(ports)) == 6
    assert (tmp_path / "controller-101" / "data").is_dir()
    assert (tmp_path / "controller-101" / "server.properties").is_file()
    assert kraft.describe()["voters"] == [101, 102, 103]


def test_controller_operations_are_container_operations_and_links_their_proxies(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    c = _cluster(tmp_path, calls, monkeypatch)
    c.kill(C102)
    assert calls == ["kill kc-r1-controller102 SIGKILL"] and not c.is_running(C102)
    c.start(C102)
    assert calls[-2:] == ["start kc-r1-controller102", "ready controller:102"] and c.is_running(C102)
    c.pause(C103)
    c.resume(C103)
    c.stop(C101)
    assert calls[-3:] == ["pause kc-r1-controller103", "unpause kc-r1-controller103",
                          "stop kc-r1-controller101 timeout=7"]
    link = c.link(B1, C101)
    link.disable()
    link.enable()
    c.link(C101, C102).add_toxic("latency", {"latency": 100})
    assert calls[-3:] == ["disable 1->101", "enable 1->101", "toxic 101->102 latency [('latency', 100)] downstream"]
    with pytest.raises(ConfigError, match="never dial brokers"):
        c.link(C101, B1)


def test_a_link_to_a_combined_voter_acts_on_its_data_and_quorum_proxies(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    c = _cluster(tmp_path, calls, monkeypatch, _spec(combined=True))
    assert c.nodes == (B1, B2, B3)
    link = c.link(B1, B2)
    assert isinstance(link, LinkGroup)
    link.disable()
    assert calls == ["disable 1->2", "disable 1->2.quorum"]
