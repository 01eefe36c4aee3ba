"""Rendered container specs of the containers backend (no Docker): images, which broker the local images run
(decided as on the process backend), environment, listeners, advertised ports and the proxy table for every
directed link."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from types import MappingProxyType

import pytest

from harness.cluster.base import CLIENT, ClusterSpec, NodeId, link_name
from harness.cluster.containers_spec import (
    LABEL_NODE,
    LOCAL_IMAGES,
    TOXIPROXY_IMAGE,
    RoleImage,
    broker_launcher,
    broker_spec,
    container_topology,
    flavour_of,
    kafka_env_name,
    local_kafka_role,
    local_mounts,
    proxy_port,
    resolve_images,
    toxiproxy_spec,
    zookeeper_spec,
)
from harness.cluster.process_flavour import BrokerLauncher, find_java, select_launcher
from harness.cluster.render import parse_properties
from harness.errors import ConfigError
from harness.install.kafka import InstallError

HOST = "127.0.0.1"
CLIENT_PORTS = {1: 41001, 2: 41002, 3: 41003}
LABELS = {"kafka-chaos.run": "r1", "kafka-chaos.owner": "h/1/0.0"}


def _spec(**kw: object) -> ClusterSpec:
    base: dict[str, object] = {"brokers": 3, "zookeepers": 1,
                               "broker_config": MappingProxyType({"zookeeper.session.timeout.ms": "6000",
                                                                  "min.insync.replicas": "2"})}
    base.update(kw)
    return ClusterSpec(**base)  # type: ignore[arg-type]


def test_default_images_are_confluent_zookeeper_mode_and_shopify_toxiproxy() -> None:
    images = resolve_images(_spec(kafka_version="7.7.1"), {})
    assert images["zookeeper"].image == "confluentinc/cp-zookeeper:7.7.1"
    assert images["kafka"].image == "confluentinc/cp-kafka:7.7.1"
    assert images["toxiproxy"].image == TOXIPROXY_IMAGE
    assert not any(i.local for i in images.values())
    flavour = flavour_of(images["kafka"], _spec())
    assert flavour.name == "apache-kafka" and flavour.version.startswith("3.7")


def test_local_images_env_selects_runtime_image_for_unset_roles_only() -> None:
    spec = _spec(images=MappingProxyType({"toxiproxy": "ghcr.io/shopify/toxiproxy:2.5.0"}))
    images = resolve_images(spec, {"KAFKA_CHAOS_LOCAL_IMAGES": "1"})
    assert images["zookeeper"].image == LOCAL_IMAGES["zookeeper"] and images["zookeeper"].local
    assert images["kafka"].local and images["kafka"].image == LOCAL_IMAGES["kafka"]
    assert images["toxiproxy"].image == "ghcr.io/shopify/toxiproxy:2.5.0" and not images["toxiproxy"].local


def test_images_local_keyword_and_command_override() -> None:
    spec = _spec(images=MappingProxyType({"kafka": "local", "kafka.command": "java -cp x --x 'a b'"}))
    images = resolve_images(spec, {})
    assert images["kafka"].local and images["kafka"].image == LOCAL_IMAGES["kafka"]
    assert images["kafka"].command == ("java", "-cp", "x", "--x", "a b")
    assert not images["zookeeper"].local
    over = resolve_images(_spec(), {}, commands={"toxiproxy": ["/toxiproxy", "-host=0.0.0.0"]})
    assert over["toxiproxy"].command == ("/toxiproxy", "-host=0.0.0.0")


def test_unknown_image_role_is_refused_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="broker"):
        resolve_images(_spec(images=MappingProxyType({"broker": "x"})), {})


def test_a_published_image_runs_its_own_apache_kafka_named_by_its_confluent_tag() -> None:
    spec = _spec()
    kafka = resolve_images(spec, {})["kafka"]
    assert broker_launcher(kafka, spec, {}, java="/usr/bin/java") is None  # a published image runs its own broker
    flavour = flavour_of(kafka, spec)
    assert flavour.name == "apache-kafka" and flavour.version.startswith("3.9 (Confluent Platform 7.9")


def _kafka_home(tmp_path: Path, version: str = "3.9.2") -> Path:
    """A directory shaped like a Kafka install (empty jars, no real Kafka)."""
    home = tmp_path / f"kafka-{version}"
    (home / "libs").mkdir(parents=True)
    (home / "config").mkdir()
    (home / "config" / "log4j.properties").write_text("log4j.rootLogger=INFO\n")
    for name in (f"kafka_2.13-{version}.jar", f"kafka-clients-{version}.jar"):
        (home / "libs" / name).write_bytes(b"")
    return home


def _local(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Local images, no mvn on PATH, an empty cache, an unreachable Apache mirror: nothing gets installed."""
    return {"KAFKA_CHAOS_LOCAL_IMAGES": "1", "PATH": "/nonexistent", "KAFKA_CHAOS_CACHE": str(tmp_path / "cache"),
            "KAFKA_CHAOS_APACHE_MIRROR": "http://127.0.0.1:9", **extra}


def _decide(spec: ClusterSpec, env: dict[str, str]) -> tuple[RoleImage, BrokerLauncher | None]:
    role = resolve_images(spec, env)["kafka"]
    launcher = broker_launcher(role, spec, env, java="/usr/bin/java")
    return local_kafka_role(role, launcher), launcher


def test_local_images_run_apache_kafka_from_an_image_of_its_install_with_the_process_backends_command(
        tmp_path: Path) -> None:
    env = _local(tmp_path, KAFKA_HOME=str(_kafka_home(tmp_path)))
    spec = _spec()
    role = resolve_images(spec, env)["kafka"]
    launcher = broker_launcher(role, spec, env, java="/usr/bin/java")
    assert launcher is not None and launcher.kafka is not None
    role = local_kafka_role(role, launcher)
    assert role.image == "localhost/kafka-chaos-kafka:3.9.2" and role.local
    assert (flavour_of(role, spec, launcher).name, flavour_of(role, spec, launcher).version) == ("apache-kafka",
                                                                                                  "3.9.2")
    b = broker_spec(spec, role, container_topology(3, 1, HOST, CLIENT_PORTS), 2, "kc-r1-broker2", LABELS, launcher)
    # the process backend's command line, with the install's paths as the image holds them
    host = launcher.argv(Path("/conf/server.properties"))
    inside = [a.replace(str(launcher.kafka.home), "/opt/kafka") for a in host]
    cp = inside.index("-cp") + 1
    inside[cp] = "/opt/kafka/libs/*"  # the image holds only the runnable jars (`runnable_jars`)
    assert b.command is not None and list(b.command) == inside
    assert b.command[-4:] == ("-cp", "/opt/kafka/libs/*", "kafka.Kafka", "/conf/server.properties")
    assert "-Dkafka.logs.dir=/conf/logs" in b.command and "-Xmx512M" in b.command
    assert "-Dlog4j.configuration=file:/opt/kafka/config/log4j.properties" in b.command
    assert b.conf_mount and b.logs_mount and b.image == "localhost/kafka-chaos-kafka:3.9.2"
    mounts = {m.host for m in b.mounts}
    assert "/usr" in mounts and all(m.mode == "ro" for m in b.mounts)
    assert str(launcher.kafka.home) not in mounts and not any(m.startswith(sys.prefix) for m in mounts)
    assert "PYTHONPATH" not in b.env and b.env["HOME"] == "/tmp"
    props = parse_properties(b.files["server.properties"])
    assert props["log.dirs"] == "/data/kafka"


def test_local_images_follow_cluster_broker_as_the_process_backend_does(tmp_path: Path) -> None:
    with_kafka = _local(tmp_path, KAFKA_HOME=str(_kafka_home(tmp_path)))
    with pytest.raises(ConfigError, match="reference broker was retired"):
        _decide(_spec(broker="reference"), with_kafka)
    for broker in ("auto", "apache-kafka"):  # nothing can be installed: an error naming the sources
        with pytest.raises(InstallError, match="mvn"):
            _decide(_spec(broker=broker), _local(tmp_path))
    same = select_launcher(with_kafka, broker="auto", kafka="3.9", java=os.path.realpath("/usr/bin/java"))
    assert _decide(_spec(), with_kafka)[1] == same  # one decision, shared with the process backend


def test_kafka_env_name_follows_confluents_rule() -> None:
    assert kafka_env_name("broker.id") == "KAFKA_BROKER_ID"
    assert kafka_env_name("listener.security.protocol.map") == "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"
    assert kafka_env_name("a_b.c-d") == "KAFKA_A__B_C___D"


def test_proxy_table_has_every_directed_link_with_its_container_port_and_upstream() -> None:
    topo = container_topology(3, 3, HOST, CLIENT_PORTS)
    names = {p.name for p in topo.proxies}
    expected = {link_name(NodeId.broker(k), NodeId.broker(j)) for k in (1, 2, 3) for j in (1, 2, 3) if k != j}
    expected |= {link_name(NodeId.broker(k), NodeId.zookeeper(i)) for k in (1, 2, 3) for i in (1, 2, 3)}
    expected |= {link_name(CLIENT, NodeId.broker(j)) for j in (1, 2, 3)}
    assert names == expected and len(topo.proxies) == 3 * 2 + 3 * 3 + 3
    p = topo.proxy(NodeId.broker(1), NodeId.broker(2))
    assert (str(p.listen), str(p.upstream), str(p.advertised)) == ("0.0.0.0:20102", "broker2:9101", "toxiproxy:20102")
    z = topo.proxy(NodeId.broker(3), NodeId.zookeeper(2))
    assert (str(z.listen), str(z.upstream), str(z.advertised)) == ("0.0.0.0:21302", "zk2:2181", "toxiproxy:21302")
    c = topo.proxy(CLIENT, NodeId.broker(2))
    assert (str(c.listen), str(c.upstream), str(c.advertised)) == ("0.0.0.0:19002", "broker2:9092", "127.0.0.1:41002")
    assert len({proxy_port(p.src, p.dst) for p in topo.proxies}) == len(topo.proxies)
    assert topo.bootstrap_servers == "127.0.0.1:41001,127.0.0.1:41002,127.0.0.1:41003"


def test_kafka_image_broker_env_has_listeners_and_host_mapped_external() -> None:
    spec = _spec()
    topo = container_topology(3, 1, HOST, CLIENT_PORTS)
    b = broker_spec(spec, resolve_images(spec, {})["kafka"], topo, 2, "kc-r1-broker2", LABELS)
    env = b.env
    assert env["KAFKA_BROKER_ID"] == "2"
    assert env["KAFKA_LISTENERS"] == ("FROM1://0.0.0.0:9101,FROM2://0.0.0.0:9102,FROM3://0.0.0.0:9103,"
                                      "EXTERNAL://0.0.0.0:9092")
    assert env["KAFKA_ADVERTISED_LISTENERS"] == ("FROM1://toxiproxy:20102,FROM2://broker2:9102,"
                                                 "FROM3://toxiproxy:20302,EXTERNAL://127.0.0.1:41002")
    assert env["KAFKA_INTER_BROKER_LISTENER_NAME"] == "FROM2"
    assert env["KAFKA_ZOOKEEPER_CONNECT"] == "toxiproxy:21201"
    assert env["KAFKA_ZOOKEEPER_SESSION_TIMEOUT_MS"] == "6000" and env["KAFKA_MIN_INSYNC_REPLICAS"] == "2"
    assert env["KAFKA_LOG_DIRS"] == "/var/lib/kafka/data"
    assert "KAFKA_REFERENCE_BUGS" not in env
    assert b.alias == "broker2" and b.labels[LABEL_NODE] == "broker:2" and b.labels["kafka-chaos.run"] == "r1"
    assert not b.conf_mount and b.command is None and b.exposed == ()


def test_confluent_zookeeper_env_single_and_ensemble() -> None:
    role = resolve_images(_spec(), {})["zookeeper"]
    one = zookeeper_spec(_spec(), role, 1, "kc-zk1", LABELS, java=None, classpath="")
    assert one.env["ZOOKEEPER_CLIENT_PORT"] == "2181" and "ZOOKEEPER_SERVERS" not in one.env
    assert one.exposed == (2181,) and one.alias == "zk1"
    three = zookeeper_spec(_spec(zookeepers=3), role, 2, "kc-zk2", LABELS, java=None, classpath="")
    assert three.env["ZOOKEEPER_SERVER_ID"] == "2"
    assert three.env["ZOOKEEPER_SERVERS"] == "zk1:2888:3888;zk2:2888:3888;zk3:2888:3888"


def test_local_zookeeper_renders_zoo_cfg_and_java_command() -> None:
    role = resolve_images(_spec(zookeepers=3), {"KAFKA_CHAOS_LOCAL_IMAGES": "1"})["zookeeper"]
    z = zookeeper_spec(_spec(zookeepers=3), role, 3, "kc-zk3", LABELS, java="/usr/bin/java",
                       classpath="/opt/jars/*", tick_ms=500)
    cfg = z.files["zoo.cfg"]
    assert "server.1=zk1:2888:3888" in cfg and "server.3=zk3:2888:3888" in cfg
    assert "clientPortAddress=0.0.0.0" in cfg and "maxSessionTimeout=60000" in cfg
    assert z.command is not None and "echo 3 > /data/zookeeper/myid" in z.command[2]
    assert z.command[-3:] == ("/opt/jars/*", "org.apache.zookeeper.server.quorum.QuorumPeerMain", "/conf/zoo.cfg")
    assert z.conf_mount


def test_toxiproxy_publishes_api_and_client_proxy_ports() -> None:
    spec = _spec()
    default = toxiproxy_spec(spec, resolve_images(spec, {})["toxiproxy"], "kc-tp", LABELS)
    assert default.exposed == (8474, 19001, 19002, 19003) and default.command is None
    local = toxiproxy_spec(spec, resolve_images(spec, {"KAFKA_CHAOS_LOCAL_IMAGES": "1"})["toxiproxy"], "kc-tp",
                           LABELS)
    assert local.command is not None
    assert shlex.join(local.command[1:]) == "-m harness.toxiproxy.server --host 0.0.0.0 --port 8474"


def test_local_mounts_cover_java_and_its_links_outside_usr_and_are_minimal() -> None:
    java = find_java(os.environ)
    mounts = local_mounts(java)
    paths = [m.host for m in mounts]
    assert "/usr" in paths and all(m.mode == "ro" and m.host == m.container for m in mounts)
    assert not any(p != q and p.startswith(q.rstrip("/") + "/") for p in paths for q in paths)
    if java:  # every file of the JDK resolves inside a mounted path (Debian links conf/ to /etc/java-N-openjdk)
        home = Path(os.path.realpath(java)).parent.parent
        for f in (home / "conf").rglob("*"):
            target = os.path.realpath(f)
            assert any(target == p or target.startswith(p.rstrip("/") + "/") for p in paths), target
