"""KRaft clusters on the containers backend (Apache Kafka 4.x from the local Kafka image): dedicated controller
containers 101..100+C (or combined voters, brokers 1..C with `process.roles=broker,controller`) and broker
containers, wired through the toxiproxy container as the process backend wires its KRaft nodes
(`process_topology`, `render.plan_routes`: every dialer reaches every other voter through its own proxy, and
every voter has one controller listener `CTRL<d>` per dialer d, advertised as d's proxy to it).

Owns, as pure values (unit-tested without a Docker API): the container-side topology (names `controller<id>`
and `broker<k>`; on every voter `CTRL<d>` listens on 9300 + s(d), see below; the quorum proxies' ports on the
toxiproxy container), each node's `ContainerSpec` (its `render_kraft` properties read from /conf, its log
directory a bind mount of `<node dir>/data` at /data/kafka, its direct ports published on fixed host ports) and
the spec of the one-off container that formats that directory. And, with the engine: `KraftContainers`, which
runs the formats, starts the nodes and waits until they are ready.

Storage: before the first start, one short-lived container per node (same image, same mounts, no network) runs
`kafka.tools.StorageTool format -t <cluster id> -c /conf/server.properties --ignore-formatted`, all in
parallel; the node's container then starts on the formatted directory. So the format runs exactly once, with
the jars and the rendered file the node runs with, and a `docker start` after kill/stop starts on the same data.

Readiness (as on the process backend): a controller answers ApiVersions on its own controller listener's
published port; a broker answers Metadata through its own `client->k` proxy listing itself (KRaft lists only
registered, unfenced brokers). Direct addresses for observers: `quorum_voters` (voter -> the published port of
its own listener `CTRL<itself>`) and `broker_addresses` (broker -> published EXTERNAL port), on host ports drawn
once (`allocate_ports`) and bound explicitly, because Docker may publish an ephemeral port elsewhere after a
`docker start`.

Ports, with s(d) the dialer's index (a broker's id, or 10 + (c-100) for a dedicated controller c): a voter's
`CTRL<d>` listens on 9300 + s(d); on the toxiproxy container, beside `containers_spec`'s ports, d's quorum
proxy to a dedicated controller c is 22000 + 100*s(d) + (c-100), to a combined voter broker j (`d->j.quorum`)
24000 + 100*s(d) + j.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import requests

from harness.cluster.base import CLIENT, ClusterSpec, NodeId
from harness.cluster.containers_engine import NodeContainer, volume_map
from harness.cluster.containers_ready import start_until_ready, wait_kafka_api
from harness.cluster.containers_spec import (
    CONF_DIR,
    EXTERNAL_PORT,
    LABEL_NODE,
    LOCAL_KAFKA_DATA,
    ContainerSpec,
    Mount,
    RoleImage,
    broker_host,
    from_port,
    image_launcher,
    local_env,
    local_mounts,
    proxy_port,
    security_mounts,
)
from harness.cluster.links import LinkGraph
from harness.cluster.ports import allocate_ports
from harness.cluster.process_flavour import BrokerLauncher
from harness.cluster.readiness import BrokerReadiness
from harness.cluster.render import (
    ControllerEndpoint,
    HostPort,
    ProxyRoute,
    Topology,
    broker_listeners,
    controller_listener_name,
    plan_routes,
)
from harness.cluster.render_kraft import (
    kraft_cluster_id,
    render_kraft_broker,
    render_kraft_controller,
    storage_format_args,
)
from harness.cluster.security import ClusterSecurity, access
from harness.errors import BackendError, ConfigError
from harness.history.nodes import CONTROLLER_ID_BASE

log = logging.getLogger("harness.cluster.containers")

CONTROLLER_PORT_BASE = 9300
FORMAT_TIMEOUT_S = 180.0
KRAFT_HINT = ("see the node's container.log and logs/server.log; check controller.quorum.voters (via the proxies "
              "k->101... on the toxiproxy container), the listeners in server.properties and the published ports")


def controller_host(node_id: int) -> str:
    return f"controller{node_id}"


def dialer_index(node: NodeId) -> int:
    """A broker's id (1..9), or 10 + c-100 for a dedicated controller c (11..15)."""
    return node.id if node.role == "broker" else 10 + node.id - CONTROLLER_ID_BASE


def controller_port(dialer: NodeId) -> int:
    """The port of listener `CTRL<d>` (the quorum traffic of `dialer`) on every voter, inside the network."""
    return CONTROLLER_PORT_BASE + dialer_index(dialer)


def quorum_proxy_port(src: NodeId, voter: NodeId) -> int:
    """The container-side listen port of `src`'s quorum proxy to `voter` on the toxiproxy container."""
    if voter.role == "controller":
        return 22000 + 100 * dialer_index(src) + voter.id - CONTROLLER_ID_BASE
    return 24000 + 100 * dialer_index(src) + voter.id


def check_kraft_spec(spec: ClusterSpec) -> None:
    """What a KRaft cluster on containers needs of its counts (before anything is installed or started)."""
    if spec.brokers < 1 or spec.controllers not in (1, 3, 5) or (spec.combined and spec.controllers > spec.brokers):
        raise ConfigError(f"containers backend, KRaft: brokers must be >= 1 and controllers 1, 3 or 5 (combined: "
                          f"at most the brokers); got brokers={spec.brokers}, controllers={spec.controllers}, "
                          f"combined={spec.combined}")


def kraft_images(images: Mapping[str, RoleImage], launcher: BrokerLauncher | None) -> dict[str, RoleImage]:
    """The roles a KRaft cluster runs (no ZooKeeper); refuses a broker that is not Apache Kafka in the local
    image (a published image's broker runs ZooKeeper mode here)."""
    kafka = images["kafka"]
    if launcher is None or not kafka.local:
        raise ConfigError(f"containers backend, KRaft: the kafka image {kafka.image} does not run Apache Kafka from "
                          "the cache's install; KRaft runs in the local Kafka image (hint: images.kafka: local, or "
                          "KAFKA_CHAOS_LOCAL_IMAGES=1 after compose/podman/setup.sh; or --backend process)")
    return {role: image for role, image in images.items() if role != "zookeeper"}


def node_alias(node: NodeId) -> str:
    return controller_host(node.id) if node.role == "controller" else broker_host(node.id)


def node_dir_name(node: NodeId) -> str:
    return f"{node.role}-{node.id}"


def kraft_container_topology(spec: ClusterSpec, host_ip: str, client_ports: Mapping[int, int]) -> Topology:
    """The KRaft link topology inside the network; `client_ports[j]` is the host-mapped port of `client->j`."""
    n = spec.brokers
    listeners = tuple(
        broker_listeners(k, n, broker_host(k), [from_port(s) for s in range(1, n + 1)] + [EXTERNAL_PORT],
                         bind_host="0.0.0.0") for k in range(1, n + 1))
    graph = LinkGraph.of(spec)
    voters = tuple(ControllerEndpoint(v, node_alias(v), MappingProxyType({d: controller_port(d)
                                                                          for d in graph.quorum_dialers()}),
                                      bind_host="0.0.0.0") for v in graph.voter_nodes())
    proxies: list[ProxyRoute] = []
    for route in plan_routes(listeners, (), voters):
        if route.src == CLIENT or not isinstance(route.src, NodeId):
            port = proxy_port(CLIENT, route.dst)
            try:
                advertised = HostPort(host_ip, client_ports[route.dst.id])
            except KeyError as exc:
                raise ConfigError(f"no host-mapped port for proxy {route.name}") from exc
        else:
            quorum = route.channel == "quorum"
            port = quorum_proxy_port(route.src, route.dst) if quorum else proxy_port(route.src, route.dst)
            advertised = HostPort("toxiproxy", port)
        proxies.append(ProxyRoute.of(route, HostPort("0.0.0.0", port), advertised))
    return Topology(listeners, (), tuple(proxies), voters)


def published_ports(topology: Topology, node: NodeId) -> tuple[int, ...]:
    """The container ports of `node` reached directly from the host: EXTERNAL of a broker, and a voter's own
    controller listener `CTRL<itself>`."""
    ports = (EXTERNAL_PORT,) if node.role == "broker" else ()
    return ports + tuple(c.port(node) for c in topology.controllers if c.node == node)


def kraft_node_spec(spec: ClusterSpec, role: RoleImage, topology: Topology, node: NodeId, name: str,
                    labels: Mapping[str, str], launcher: BrokerLauncher, node_dir: Path,
                    published: Mapping[int, int], security: ClusterSecurity | None = None) -> ContainerSpec:
    """A KRaft broker or dedicated controller: its rendered properties at /conf/server.properties (with
    `security`'s, whose certificates are mounted), run by the process backend's command line with the image's
    paths; its log directory the bind mount `node_dir/data`."""
    render = render_kraft_controller if node.role == "controller" else render_kraft_broker
    text = render(topology, node.id, log_dirs=LOCAL_KAFKA_DATA, overrides=spec.broker_config,
                  advertise_controllers=launcher.advertises_controllers, security=security)
    command = role.command or tuple(image_launcher(launcher).argv(Path(CONF_DIR) / "server.properties"))
    env = launcher.env(Path(CONF_DIR), {"PATH": local_env()["PATH"], "HOME": "/tmp"})
    data = Mount(str(node_dir.resolve() / "data"), LOCAL_KAFKA_DATA, "rw")
    return ContainerSpec(name, str(node), role.image, node_alias(node), command, env, (),
                         (*local_mounts(launcher.java, python=False), data, *security_mounts(security)),
                         {**labels, LABEL_NODE: str(node)},
                         {"server.properties": text}, conf_mount=True, logs_mount=True, published=dict(published))


def format_spec(node_spec: ContainerSpec, cluster_id: str, launcher: BrokerLauncher,
                features: Mapping[str, int] | None = None, security: ClusterSecurity | None = None) -> ContainerSpec:
    """The one-off container formatting a node's log directory: the node's image, mounts and environment,
    running `StorageTool format` on the node's own /conf/server.properties (with the cluster's `features`, and
    `security`'s SCRAM users, `--add-scram`); no ports."""
    args = storage_format_args(cluster_id, f"{CONF_DIR}/server.properties", features, security)
    command = tuple(image_launcher(launcher).tool_argv(Path(CONF_DIR) / "logs", *args))
    return dataclasses.replace(node_spec, name=f"{node_spec.name}-format", command=command, exposed=(), published={},
                               labels={**node_spec.labels, LABEL_NODE: f"format {node_spec.node}"}, files={})


class KraftContainers:
    """Every KRaft node of one containers cluster: specs, storage format, start and readiness. The node
    containers go into `containers` (the cluster's own map, so its teardown removes them on every path)."""

    def __init__(self, spec: ClusterSpec, role: RoleImage, launcher: BrokerLauncher, *, labels: Mapping[str, str],
                 prefix: str, workdir: Path, host_ip: str, client_ports: Mapping[int, int],
                 containers: dict[NodeId, NodeContainer], network: Any, stop_timeout_s: float,
                 security: ClusterSecurity | None = None) -> None:
        self.spec = spec
        self.security = security
        self.launcher = launcher
        self.labels = dict(labels)
        self.topology = kraft_container_topology(spec, host_ip, client_ports)
        self.cluster_id = spec.cluster_id or kraft_cluster_id(0)
        self._containers = containers
        self._ready = BrokerReadiness("", hint=KRAFT_HINT, security=access(security, "admin"))
        dedicated = [c.node for c in self.topology.controllers if c.node.role == "controller"]
        self.order = (*dedicated, *(NodeId.broker(k) for k in range(1, spec.brokers + 1)))
        """Start order: dedicated controllers first (the brokers register with them)."""
        wanted = [(node, p) for node in self.order for p in published_ports(self.topology, node)]
        drawn = iter(allocate_ports(len(wanted)))
        self.host_ports: dict[NodeId, dict[int, int]] = {}
        for node, p in wanted:
            self.host_ports.setdefault(node, {})[p] = next(drawn)
        self.quorum_voters = {c.node.id: f"{host_ip}:{self.host_ports[c.node][c.port(c.node)]}"
                              for c in self.topology.controllers}
        self.broker_addresses = {k: f"{host_ip}:{self.host_ports[NodeId.broker(k)][EXTERNAL_PORT]}"
                                 for k in range(1, spec.brokers + 1)}
        for node in self.order:
            node_dir = workdir / node_dir_name(node)
            (node_dir / "data").mkdir(parents=True, exist_ok=True)
            cspec = kraft_node_spec(spec, role, self.topology, node, f"{prefix}-{node_alias(node)}", labels,
                                    launcher, node_dir, self.host_ports[node], security)
            containers[node] = NodeContainer(cspec, network, node_dir, stop_timeout_s)

    def container(self, node: NodeId) -> NodeContainer:
        try:
            return self._containers[node]
        except KeyError as exc:
            raise BackendError(f"{node}: no such KRaft node (nodes {', '.join(map(str, self.order))})") from exc

    # -- bring-up ---------------------------------------------------------------------------------

    def format_storage(self, client: Any, deadline: float) -> None:
        """One `StorageTool format` container per node, all at once; each one's output is kept in
        `<node dir>/format.log`, and every one is removed whatever happens. An error names each node that failed
        with the end of its output."""
        jobs: list[tuple[NodeId, Any, Path]] = []
        failed: list[str] = []
        try:
            for node in self.order:
                c = self.container(node)
                fspec = format_spec(c.spec, self.cluster_id, self.launcher, self.spec.features, self.security)
                volumes = {h: {"bind": inside, "mode": mode} for h, inside, mode in volume_map(fspec, c.node_dir)}
                try:
                    jobs.append((node, client.containers.run(
                        fspec.image, list(fspec.command or ()), detach=True, name=fspec.name, labels=dict(fspec.labels),
                        environment=dict(fspec.env), volumes=volumes, network_mode="none"), c.node_dir))
                except Exception as exc:
                    raise BackendError(f"{node}: cannot start the storage format container {fspec.name} (image "
                                       f"{fspec.image}): {exc}") from exc
            for node, job, node_dir in jobs:
                code = _wait_exit(job, max(1.0, min(FORMAT_TIMEOUT_S, deadline - time.monotonic())))
                output = bytes(job.logs()).decode("utf-8", "replace")
                (node_dir / "format.log").write_text(output, encoding="utf-8")
                if code != 0:
                    what = "did not finish in time" if code is None else f"exited {code}"
                    tail = "\n".join(output.rstrip().splitlines()[-8:])
                    failed.append(f"{node}: kafka-storage format {what} (container {job.name}); it printed:\n{tail}")
        finally:
            for node, job, _ in jobs:
                try:
                    job.remove(force=True, v=True)
                except Exception as exc:  # the cluster's teardown removes whatever carries the run's label
                    log.warning("%s: could not remove the format container %s: %s", node, job.name, exc)
        if failed:
            raise BackendError(f"formatting the KRaft log directories (cluster id {self.cluster_id}) failed:\n"
                               + "\n".join(failed))

    def start_all(self, deadline: float) -> None:
        """Start every node (controllers first) and wait until each is ready."""
        for node in self.order:
            self.container(node).start()
        for node in self.order:
            self.wait_ready(node, deadline)

    # -- operations ---------------------------------------------------------------------------------

    def start(self, node: NodeId, deadline: float) -> None:
        """`docker start` a stopped/killed node (same container, same data) and wait until it is ready (once more
        if it exits while starting: `start_until_ready`)."""
        start_until_ready(self.container(node), lambda: self.wait_ready(node, deadline), deadline)

    def wait_ready(self, node: NodeId, deadline: float) -> None:
        c = self.container(node)
        if node.role == "controller":
            host, _, port = self.quorum_voters[node.id].rpartition(":")
            wait_kafka_api(c, host, int(port), deadline, hint=KRAFT_HINT,
                           tls=access(self.security, "admin", controllers=True).ssl_context())
            return
        proxy = str(self.topology.proxy(CLIENT, node).advertised)
        self._ready.wait_ready(node.id, proxy, deadline, who=f"{node} (container {c.spec.name})", alive=c.is_running,
                               exited=lambda: f"exit code {c.exit_code()}", tail=c.tail)

    def describe_node(self, node: NodeId) -> dict[str, object]:
        """What `describe()` adds to a KRaft node's entry: its direct address(es) and the voters it dials."""
        out: dict[str, object] = {"direct": {str(p): h for p, h in self.host_ports.get(node, {}).items()},
                                  "voters": {str(k): str(v) for k, v in self.topology.voter_addresses(node).items()}}
        voter = next((c for c in self.topology.controllers if c.node == node), None)
        if voter is not None:
            out["controller_listeners"] = {controller_listener_name(d): str(a)
                                           for d, a in self.topology.controller_advertised(voter).items()}
        if node.role == "broker":
            out["advertised"] = {n: str(a) for n, a in self.topology.advertised_listeners(node.id).items()}
        return out

    def describe(self) -> dict[str, object]:
        return {"cluster_id": self.cluster_id, "voters": list(self.spec.voter_ids()), "combined": self.spec.combined,
                "quorum_voters": {str(k): v for k, v in self.quorum_voters.items()},
                "broker_addresses": {str(k): v for k, v in self.broker_addresses.items()}}


def _wait_exit(container: Any, timeout_s: float) -> int | None:
    """The container's exit code, or None when it did not exit within `timeout_s`."""
    try:
        return int(container.wait(timeout=timeout_s)["StatusCode"])
    except requests.exceptions.RequestException:  # ReadTimeout / ConnectionError: still running
        return None
