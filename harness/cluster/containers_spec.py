"""What the containers backend starts, as pure values: per-role image and command selection, which broker
runs in the local images, the container-side port plan, the link topology with host-mapped client ports,
and one `ContainerSpec` (image, command, environment, exposed ports, mounts, aliases, labels) per ZooKeeper
member, broker and the Toxiproxy. No Docker calls here, so every rendered spec is unit-tested without a
Docker API.

Roles and images (`ClusterSpec.images`, keys `zookeeper`, `kafka`, `toxiproxy`):
- defaults: `confluentinc/cp-zookeeper:<v>`, `confluentinc/cp-kafka:<v>` (Confluent Platform `v`
  = `ClusterSpec.kafka_version`, configured through `ZOOKEEPER_*` / `KAFKA_*` environment variables as
  Confluent documents), `ghcr.io/shopify/toxiproxy:2.9.0` (proxies created through its API).
- `local` (or any `localhost/kafka-chaos-*` image, or every role not set when `KAFKA_CHAOS_LOCAL_IMAGES=1`):
  the runtime image built by `compose/podman/setup.sh` (a static busybox) with the host's /usr (Java) and,
  where needed, Python and the project (source + venv) bind-mounted read-only at their own paths.
  ZooKeeper runs from the pyspark jars and Toxiproxy is the embedded server (`python -m
  harness.toxiproxy.server`). The broker follows `ClusterSpec.broker` exactly as on the process backend
  (`process_flavour.select_launcher`): Apache Kafka runs in `localhost/kafka-chaos-kafka:<version>`, the
  runtime image plus the install's `libs/` and log4j config under /opt/kafka (built by
  `containers_ready.ensure_kafka_image`, labelled with a digest of those files), as `java <jvm options>
  -Dkafka.logs.dir=/conf/logs -cp '/opt/kafka/libs/*' kafka.Kafka /conf/server.properties`.
- `<role>.command` (programmatic `ClusterSpec.images` keys, or `ContainersBackend(commands=...)`):
  a shell-style command line replacing the role's command.

Names inside the network: `zk<i>`, `broker<j>`, `toxiproxy`. Broker j listens on `FROMk` = 9100+k and
`EXTERNAL` = 9092; proxies listen on the toxiproxy container at `client->j` 19000+j (published to the
host), `k->j` 20000+100k+j and `k->zkI` 21000+100k+I (KRaft nodes and their ports: `containers_kraft`).
"""

from __future__ import annotations

import dataclasses
import os
import shlex
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import harness
from harness.cluster.base import CLIENT, BrokerFlavour, ClusterSpec, NodeId
from harness.cluster.process_flavour import BrokerLauncher, select_launcher
from harness.cluster.render import (
    HostPort,
    ProxyRoute,
    Topology,
    ZooKeeperEndpoint,
    broker_listeners,
    parse_properties,
    plan_routes,
    render_server_properties,
)
from harness.cluster.render_zookeeper import ZooKeeperServer, render_zoo_cfg
from harness.cluster.security import ClusterSecurity
from harness.errors import ConfigError

ROLES = ("zookeeper", "kafka", "toxiproxy")
LOCAL = "local"
LOCAL_IMAGE_PREFIX = "localhost/kafka-chaos-"
LOCAL_IMAGES = MappingProxyType({"zookeeper": "localhost/kafka-chaos-zookeeper:latest",
                                 "kafka": "localhost/kafka-chaos-broker:latest",
                                 "toxiproxy": "localhost/kafka-chaos-toxiproxy:latest"})
RUNTIME_IMAGE = "localhost/kafka-chaos-runtime:latest"
KAFKA_IMAGE_REPO = "localhost/kafka-chaos-kafka"
KAFKA_IN_IMAGE = Path("/opt/kafka")
TOXIPROXY_IMAGE = "ghcr.io/shopify/toxiproxy:2.9.0"
TOXIPROXY_HOST = "toxiproxy"
TOXIPROXY_API_PORT = 8474
EXTERNAL_PORT = 9092
ZK_CLIENT_PORT, ZK_PEER_PORT, ZK_ELECTION_PORT = 2181, 2888, 3888
LABEL_RUN, LABEL_OWNER, LABEL_NODE = "kafka-chaos.run", "kafka-chaos.owner", "kafka-chaos.node"
CONF_DIR = "/conf"
LOCAL_KAFKA_DATA = "/data/kafka"
LOCAL_ZK_DATA = "/data/zookeeper"
CONFLUENT_KAFKA_DATA = "/var/lib/kafka/data"


def from_port(source_broker: int) -> int:
    return 9100 + source_broker


def proxy_port(src: NodeId | str, dst: NodeId) -> int:
    """The container-side listen port of a directed link's proxy on the toxiproxy container."""
    if src == CLIENT or not isinstance(src, NodeId):
        return 19000 + dst.id
    base = 21000 if dst.role == "zookeeper" else 20000
    return base + 100 * src.id + dst.id


def broker_host(broker_id: int) -> str:
    return f"broker{broker_id}"


def zk_host(zk_id: int) -> str:
    return f"zk{zk_id}"


def kafka_env_name(key: str) -> str:
    """Confluent's property -> variable rule: KAFKA_ prefix, upper case, `.`->`_`, `_`->`__`, `-`->`___`."""
    out = []
    for ch in key:
        out.append({".": "_", "_": "__", "-": "___"}.get(ch, ch.upper()))
    return "KAFKA_" + "".join(out)


@dataclass(frozen=True, slots=True)
class RoleImage:
    """How one role runs: image, whether it is the local runtime image, and a command override."""

    role: str
    image: str
    local: bool
    command: tuple[str, ...] | None = None


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def resolve_images(spec: ClusterSpec, environ: Mapping[str, str],
                   commands: Mapping[str, str | Sequence[str]] | None = None) -> dict[str, RoleImage]:
    """Per role: the image and command to use, from `spec.images`, `commands` and KAFKA_CHAOS_LOCAL_IMAGES."""
    unknown = sorted(k for k in spec.images if k not in ROLES and k.removesuffix(".command") not in ROLES)
    if unknown:
        raise ConfigError(f"cluster.images has unknown keys {unknown}; use {', '.join(ROLES)} "
                          "(and <role>.command)")
    all_local = _truthy(environ.get("KAFKA_CHAOS_LOCAL_IMAGES"))
    cp = confluent_version(spec.kafka_version)
    defaults = {"zookeeper": f"confluentinc/cp-zookeeper:{cp}",
                "kafka": f"confluentinc/cp-kafka:{cp}", "toxiproxy": TOXIPROXY_IMAGE}
    out: dict[str, RoleImage] = {}
    for role in ROLES:
        given = spec.images.get(role, "").strip()
        if not given:
            given = LOCAL if all_local else defaults[role]
        local = given == LOCAL or given.startswith(LOCAL_IMAGE_PREFIX)
        image = LOCAL_IMAGES[role] if given == LOCAL else given
        raw: str | Sequence[str] | None = (commands or {}).get(role) or spec.images.get(f"{role}.command")
        command: tuple[str, ...] | None = None
        if raw:
            command = tuple(shlex.split(raw)) if isinstance(raw, str) else tuple(raw)
            if not command:
                raise ConfigError(f"cluster.images {role}.command is empty")
        out[role] = RoleImage(role, image, local, command)
    return out


def confluent_version(kafka: str) -> str:
    """The Confluent Platform tag of the published images for `cluster.kafka`: CP 7.m ships Apache Kafka
    3.m, so `3.9` or `3.9.2` map to `7.9.0` (the line's first release: later CP patches do not follow
    Kafka's); a CP 7.x version is taken as it is."""
    parts = kafka.strip().split(".")
    if parts[0] == "3" and len(parts) >= 2 and parts[1].isdigit():
        return f"7.{parts[1]}.0"
    return kafka


def broker_launcher(kafka: RoleImage, spec: ClusterSpec, environ: Mapping[str, str], *, java: str | None,
                    progress: Callable[[str], None] | None = None) -> BrokerLauncher | None:
    """The broker the local images run, chosen as the process backend chooses (`select_launcher`: `auto` takes
    Apache Kafka, installed where it is missing); None for a published image, which runs its own broker
    (`flavour_of` reads its tag)."""
    if not kafka.local:
        return None
    launcher = select_launcher(environ, broker=spec.broker, kafka=spec.kafka_version,
                               java=os.path.realpath(java) if java else "java", progress=progress, mode=spec.mode)
    if not java:
        raise ConfigError("the local Apache Kafka image needs host Java: no `java` on PATH or in JAVA_HOME")
    return launcher


def local_kafka_role(kafka: RoleImage, launcher: BrokerLauncher | None) -> RoleImage:
    """The local broker image follows the flavour: Apache Kafka's image (`kafka_image`) instead of the
    runtime-image default; an image named explicitly or a published one stays as given."""
    if launcher is None or not kafka.local or kafka.image != LOCAL_IMAGES["kafka"]:
        return kafka
    return dataclasses.replace(kafka, image=f"{KAFKA_IMAGE_REPO}:{launcher.kafka.version}")


def flavour_of(kafka: RoleImage, spec: ClusterSpec, launcher: BrokerLauncher | None = None) -> BrokerFlavour:
    """The launcher's flavour for the local images; Apache Kafka for a published image (version from the
    Confluent tag)."""
    if launcher is not None:
        return launcher.flavour
    if kafka.local:
        raise ConfigError("the local kafka image runs Apache Kafka through a launcher, and none was chosen")
    tag = kafka.image.rpartition(":")[2] if ":" in kafka.image.rpartition("/")[2] else ""
    version = f"unknown (image {kafka.image})"
    if "confluentinc/" in kafka.image and tag[:2] == "7.":
        minor = tag.split(".")[1]
        version = f"3.{minor} (Confluent Platform {tag})"
    return BrokerFlavour("apache-kafka", version)


def image_launcher(launcher: BrokerLauncher) -> BrokerLauncher:
    """The same launcher with the paths it has inside the Kafka image (libs and log4j under /opt/kafka; host
    Java is mounted at its own path)."""
    kafka = launcher.kafka
    inside = dataclasses.replace(kafka, home=KAFKA_IN_IMAGE, log4j=KAFKA_IN_IMAGE / "config" / kafka.log4j.name)
    return dataclasses.replace(launcher, kafka=inside)


@dataclass(frozen=True, slots=True)
class Mount:
    host: str
    container: str
    mode: str = "ro"


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """One container to create: everything `docker create` needs, and the node it is."""

    name: str
    node: str
    image: str
    alias: str
    command: tuple[str, ...] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    exposed: tuple[int, ...] = ()
    """Container ports published on ephemeral host ports (Docker may pick new ones at each `docker start`)."""
    mounts: tuple[Mount, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)
    """Rendered files, written to the node's work directory (for the record, and for the runtime image)."""
    conf_mount: bool = False
    """Mount the node's work directory (holding `files`) read-only at /conf."""
    logs_mount: bool = False
    """Mount the node's `logs/` read-write at /conf/logs (Kafka's `kafka.logs.dir`: its log files land in the
    run's cluster/ directory as on the process backend)."""
    published: Mapping[int, int] = field(default_factory=dict)
    """Container port -> a fixed host port, the same after every `docker start` (KRaft's direct addresses)."""


def project_root() -> Path:
    return Path(harness.__file__).resolve().parent.parent


def _java_home(java: str) -> Path:
    return Path(os.path.realpath(java)).parent.parent


def local_mounts(java: str | None, classpath: str = "", *, python: bool = True) -> tuple[Mount, ...]:
    """Read-only mounts that let the busybox runtime image run host Java and (`python`) host Python and the
    project."""
    paths: set[str] = {"/usr"}
    if python:
        paths.add(str(project_root()))
        for prefix in (sys.prefix, sys.base_prefix):
            paths.add(os.path.realpath(prefix))
    if java:
        home = _java_home(java)
        for root, _dirs, files in os.walk(home):  # Debian links conf files to /etc/java-<n>-openjdk
            for name in files:
                target = os.path.realpath(os.path.join(root, name))
                if not target.startswith(("/usr/", str(home))):
                    parts = Path(target).parts
                    paths.add(str(Path(*parts[:3])))
        paths.add(str(home))
    for entry in classpath.split(os.pathsep):
        if entry:
            paths.add(os.path.realpath(entry.removesuffix("*").rstrip("/") or "/"))
    keep = sorted(p for p in paths if Path(p).exists())
    minimal = [p for p in keep if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in keep)]
    return tuple(Mount(p, p) for p in minimal)


def local_env() -> dict[str, str]:
    return {"PATH": "/bin:/usr/bin:/usr/local/bin", "HOME": "/tmp", "PYTHONPATH": str(project_root()),
            "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1"}


def session_timeout_ms(spec: ClusterSpec) -> int:
    raw = spec.broker_config.get("zookeeper.session.timeout.ms", "18000")
    try:
        return int(raw)
    except ValueError as exc:
        raise ConfigError(f"broker_config zookeeper.session.timeout.ms={raw!r} is not an integer") from exc


def zookeeper_spec(spec: ClusterSpec, role: RoleImage, zk_id: int, name: str, labels: Mapping[str, str],
                   *, java: str | None, classpath: str, tick_ms: int = 500) -> ContainerSpec:
    """ZooKeeper member `zk_id`: cp-zookeeper env, or zoo.cfg + host Java in the runtime image."""
    members = [ZooKeeperServer(i, zk_host(i), ZK_CLIENT_PORT, ZK_PEER_PORT, ZK_ELECTION_PORT)
               for i in range(1, spec.zookeepers + 1)]
    node = str(NodeId.zookeeper(zk_id))
    node_labels = {**labels, LABEL_NODE: node}
    if not role.local:
        env = {"ZOOKEEPER_CLIENT_PORT": str(ZK_CLIENT_PORT), "ZOOKEEPER_TICK_TIME": "2000",
               "ZOOKEEPER_SERVER_ID": str(zk_id), "ZOOKEEPER_INIT_LIMIT": "10", "ZOOKEEPER_SYNC_LIMIT": "5",
               "KAFKA_OPTS": "-Dzookeeper.4lw.commands.whitelist=srvr,stat,ruok,mntr,conf"}
        if spec.zookeepers > 1:
            env["ZOOKEEPER_SERVERS"] = ";".join(f"{m.host}:{m.peer_port}:{m.election_port}" for m in members)
        return ContainerSpec(name, node, role.image, zk_host(zk_id), role.command, env, (ZK_CLIENT_PORT,),
                             labels=node_labels)
    session = session_timeout_ms(spec)
    cfg = render_zoo_cfg(zk_id, members, data_dir=LOCAL_ZK_DATA, tick_ms=tick_ms,
                         min_session_timeout_ms=2 * tick_ms, max_session_timeout_ms=max(60000, 2 * session),
                         client_host="0.0.0.0")
    cfg += "quorumListenOnAllIPs=true\n"
    command = role.command
    if command is None:
        from harness.cluster.zookeeper import DEFAULT_JVM_OPTS, MAIN_CLASS
        if not java:
            raise ConfigError("the local ZooKeeper image needs host Java: no `java` on PATH or in JAVA_HOME")
        script = f"mkdir -p {LOCAL_ZK_DATA} && echo {zk_id} > {LOCAL_ZK_DATA}/myid && exec \"$@\""
        command = ("/bin/sh", "-c", script, "zookeeper", os.path.realpath(java), *DEFAULT_JVM_OPTS,
                   f"-Dlog4j2.configurationFile={CONF_DIR}/log4j2.properties", "-cp", classpath, MAIN_CLASS,
                   f"{CONF_DIR}/zoo.cfg")
    files = {"zoo.cfg": cfg, "log4j2.properties": _LOG4J2}
    return ContainerSpec(name, node, role.image, zk_host(zk_id), command, local_env(), (ZK_CLIENT_PORT,),
                         local_mounts(java, classpath), node_labels, files, conf_mount=True)


_LOG4J2 = ("status = warn\nappender.console.type = Console\nappender.console.name = console\n"
           "appender.console.layout.type = PatternLayout\n"
           "appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{1}: %m%n\n"
           "rootLogger.level = info\nrootLogger.appenderRef.console.ref = console\n")


def toxiproxy_spec(spec: ClusterSpec, role: RoleImage, name: str, labels: Mapping[str, str]) -> ContainerSpec:
    """The Toxiproxy container: API on 8474 and every `client->j` proxy port published to the host."""
    exposed = (TOXIPROXY_API_PORT, *(proxy_port(CLIENT, NodeId.broker(j)) for j in range(1, spec.brokers + 1)))
    node_labels = {**labels, LABEL_NODE: "toxiproxy"}
    if not role.local:
        return ContainerSpec(name, "toxiproxy", role.image, TOXIPROXY_HOST, role.command, {}, exposed,
                             labels=node_labels)
    command = role.command or (sys.executable, "-m", "harness.toxiproxy.server", "--host",
                               "0.0.0.0", "--port", str(TOXIPROXY_API_PORT))
    return ContainerSpec(name, "toxiproxy", role.image, TOXIPROXY_HOST, command, local_env(), exposed,
                         local_mounts(None), node_labels)


def container_topology(brokers: int, zookeepers: int, host_ip: str,
                       client_ports: Mapping[int, int]) -> Topology:
    """The link topology inside the network; `client_ports[j]` is the host-mapped port of `client->j`."""
    listeners = tuple(
        broker_listeners(k, brokers, broker_host(k),
                         [from_port(s) for s in range(1, brokers + 1)] + [EXTERNAL_PORT], bind_host="0.0.0.0")
        for k in range(1, brokers + 1))
    zks = tuple(ZooKeeperEndpoint(i, zk_host(i), ZK_CLIENT_PORT) for i in range(1, zookeepers + 1))
    proxies: list[ProxyRoute] = []
    for route in plan_routes(listeners, zks):
        port = proxy_port(route.src, route.dst)
        if route.src == CLIENT:
            try:
                advertised = HostPort(host_ip, client_ports[route.dst.id])
            except KeyError as exc:
                raise ConfigError(f"no host-mapped port for proxy {route.name}") from exc
        else:
            advertised = HostPort(TOXIPROXY_HOST, port)
        proxies.append(ProxyRoute.of(route, HostPort("0.0.0.0", port), advertised))
    return Topology(listeners, zks, tuple(proxies))


def security_mounts(security: ClusterSecurity | None) -> tuple[Mount, ...]:
    """The run's certificates, read-only at their own path (the rendered properties name them by their host path)."""
    if security is None:
        return ()
    where = str(security.directory.resolve())
    return (Mount(where, where, "ro"),)


def broker_spec(spec: ClusterSpec, role: RoleImage, topology: Topology, broker_id: int, name: str,
                labels: Mapping[str, str], launcher: BrokerLauncher | None = None,
                security: ClusterSecurity | None = None) -> ContainerSpec:
    """Broker `broker_id`: the rendered server.properties as KAFKA_* variables (cp-kafka), or as a file read by
    the local image's broker: Apache Kafka started by `launcher` (the process backend's command line, with
    the image's paths). `security`: its listeners, stores and JAAS entries, and the certificates mounted (the local
    image only: `containers_security.check_images` refuses the others before anything starts)."""
    node = str(NodeId.broker(broker_id))
    node_labels = {**labels, LABEL_NODE: node}
    data = LOCAL_KAFKA_DATA if role.local else CONFLUENT_KAFKA_DATA
    text = render_server_properties(topology, broker_id, log_dirs=data, overrides=spec.broker_config,
                                    security=security)
    if not role.local:
        env = {kafka_env_name(k): v for k, v in parse_properties(text).items()}
        env["KAFKA_HEAP_OPTS"] = "-Xmx512M -Xms128M"
        return ContainerSpec(name, node, role.image, broker_host(broker_id), role.command, env, (),
                             labels=node_labels, files={"server.properties": text})
    properties = Path(CONF_DIR) / "server.properties"
    if launcher is None:
        raise ConfigError(f"broker:{broker_id} in the local image {role.image} needs Apache Kafka's launcher")
    command = role.command or tuple(image_launcher(launcher).argv(properties))
    env = launcher.env(Path(CONF_DIR), {"PATH": local_env()["PATH"], "HOME": "/tmp"})
    return ContainerSpec(name, node, role.image, broker_host(broker_id), command, env, (),
                         (*local_mounts(launcher.java, python=False), *security_mounts(security)), node_labels,
                         {"server.properties": text}, conf_mount=True, logs_mount=True)
