"""The containers backend: ZooKeeper (1 or 3) + N brokers + one Toxiproxy as containers on one
Testcontainers `Network`, wired as DESIGN.md "Link-level faults: one listener per source"; in KRaft mode
controllers (or combined voters) + N brokers of Apache Kafka 4.x instead (`containers_kraft`).

Bring-up order: the toxiproxy container (API and every `client->j` proxy port published), read the
host-mapped ports, create every proxy (`k->j`, `k->zkI`, `client->j`), start ZooKeeper, render each
broker's config (its EXTERNAL listener advertises the host-mapped `client->j` port), start the
brokers, wait until each is registered and answers Metadata (KRaft: format every node's storage, start the
controllers, then the brokers; `containers_kraft`; a secured cluster's certificates are made once the host
address is known, and its ZooKeeper users before the brokers start: `containers_security`). Faults: kill =
`docker kill` (SIGKILL), stop = `docker stop` (SIGTERM, controlled shutdown), start = `docker start` + readiness,
pause/resume = `docker pause/unpause`, links = proxies on the toxiproxy container (`ProcessLink`).

Images and commands per role: `containers_spec` (Confluent Platform + Shopify Toxiproxy by default;
the local busybox runtime image with host Java/Python mounted read-only when `KAFKA_CHAOS_LOCAL_IMAGES=1`
or `images: {role: local}`; their broker is chosen as on the process backend: Apache Kafka in an image
holding the install's jars). Teardown removes every container and the network on
every exit path (atexit fallback; Ryuk where it runs; `clean_leftovers()` for runs whose harness was SIGKILLed).

Layout under `workdir/`: `<node>/` (rendered files, `container.log` saved at teardown; Apache Kafka's
`server.log`, `controller.log`, `state-change.log` in `broker-<k>/logs/`; KRaft also `controller-<id>/`, and
each node's `data/` and `format.log`), `cluster.json`.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from harness.cluster.base import (
    CLIENT,
    BrokerFlavour,
    Cluster,
    ClusterBackend,
    ClusterSpec,
    Link,
    LinkGroup,
    LinkSource,
    NodeId,
)
from harness.cluster.client_security import ClientSecurity, ClientUser
from harness.cluster.containers_engine import (
    CleanedContainer,
    NodeContainer,
    clean_container_leftovers,
    docker_client,
    engine_name,
    owner_label,
    prepare_testcontainers,
    track_run,
    untrack_run,
)
from harness.cluster.containers_kraft import KraftContainers, check_kraft_spec, kraft_images
from harness.cluster.containers_ready import (
    BROKER_HINT,
    create_proxies,
    ensure_images,
    start_toxiproxy,
    start_until_ready,
    wait_zookeeper,
)
from harness.cluster.containers_security import check_images, create_users_in_zookeeper, secure
from harness.cluster.containers_spec import (
    LABEL_OWNER,
    LABEL_RUN,
    RoleImage,
    broker_launcher,
    broker_spec,
    container_topology,
    flavour_of,
    local_kafka_role,
    resolve_images,
    toxiproxy_spec,
    zookeeper_spec,
)
from harness.cluster.lifecycle import start_or_teardown
from harness.cluster.links import LinkGraph
from harness.cluster.process_flavour import BrokerLauncher, find_java, planned_broker
from harness.cluster.process_security import grant_client
from harness.cluster.process_toxiproxy import ProcessLink
from harness.cluster.readiness import BrokerReadiness
from harness.cluster.render import Topology
from harness.cluster.security import ClusterSecurity, access
from harness.errors import BackendError, ConfigError, TeardownError
from harness.toxiproxy.client import ToxiproxyClient


class ContainersBackend:
    """Brings up `ContainersCluster`s through any Docker API (Docker Engine, Podman's service)."""

    name = "containers"

    def __init__(
        self, environ: Mapping[str, str] | None = None, *, commands: Mapping[str, str | Sequence[str]] | None = None,
        stop_timeout_s: float = 30.0, zookeeper_tick_ms: int = 500, progress: Callable[[str], None] | None = None,
    ) -> None:
        self.environ = dict(os.environ if environ is None else environ)
        self.commands = dict(commands or {})
        self.stop_timeout_s = stop_timeout_s
        self.zookeeper_tick_ms = zookeeper_tick_ms
        self.progress = progress
        """Where an Apache Kafka install for the local images reports its steps (None: quietly)."""

    def available(self) -> tuple[bool, str]:
        """(True, which engine) when a Docker API answers a ping."""
        where = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        try:
            client = docker_client(timeout_s=3)
            try:
                client.ping()
                engine = engine_name(client)
            finally:
                client.close()
        except Exception as exc:
            return False, f"no Docker API answers at {where} ({type(exc).__name__})"
        local = self.environ.get("KAFKA_CHAOS_LOCAL_IMAGES")
        local = f" (local images; broker: {planned_broker(self.environ)})" if local else ""
        return True, f"{engine} at {where}{local}"

    def clean_leftovers(self) -> list[CleanedContainer]:
        """Remove containers/networks labelled by kafka-chaos runs whose harness process is gone."""
        try:
            # 30 s, as the rest of the backend: the engine's first answer (the API version) took over 5 s on a
            # loaded 2-core machine, and the leftovers were silently not looked for (seen in a suite run).
            client = docker_client(timeout_s=30)
        except BackendError:
            return []
        try:
            return clean_container_leftovers(client)
        finally:
            client.close()

    def up(self, spec: ClusterSpec, workdir: Path) -> ContainersCluster:
        """Start everything and wait until every node is ready; on any failure tear down what started.

        First removes what harnesses that died without teardown left (`clean_leftovers`; listed in the
        cluster's `cleaned_leftovers` and `describe()`). With the local images the broker is decided first
        (`containers_spec.broker_launcher`; Apache Kafka is installed into the cache when wanted and missing)."""
        if spec.log_dir_mb:
            raise ConfigError(f"containers backend: cluster.log_dir_mb ({spec.log_dir_mb}) and the disk faults "
                              f"need the process backend (a tmpfs per log directory, mounted by the harness); "
                              f"run with --backend process")
        if spec.kraft:
            check_kraft_spec(spec)
        elif spec.brokers < 1 or spec.zookeepers not in (1, 3, 5):
            raise ConfigError(f"containers backend: brokers must be >= 1 and zookeepers 1, 3 or 5; "
                              f"got brokers={spec.brokers}, zookeepers={spec.zookeepers}")
        images = resolve_images(spec, self.environ, self.commands)
        check_images(spec, images)
        launcher = broker_launcher(images["kafka"], spec, self.environ, java=find_java(self.environ),
                                   progress=self.progress)
        images["kafka"] = local_kafka_role(images["kafka"], launcher)
        if spec.kraft:
            images = kraft_images(images, launcher)
        cluster = ContainersCluster(spec, Path(workdir), images, backend=self, launcher=launcher)
        cluster.cleaned_leftovers = tuple(self.clean_leftovers())  # of harnesses that died without teardown
        return start_or_teardown(cluster)


class ContainersCluster:
    """A running containers cluster (implements `harness.cluster.base.Cluster`)."""

    def __init__(self, spec: ClusterSpec, workdir: Path, images: Mapping[str, RoleImage], *,
                 backend: ContainersBackend, launcher: BrokerLauncher | None = None) -> None:
        self.spec = spec
        self.workdir = workdir.resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.images = dict(images)
        self.launcher = launcher
        """How the local images' broker starts (None: a published image's own command)."""
        self.kafka = launcher.kafka if launcher is not None else None
        """The Apache Kafka install the local Kafka image is built from (None: the broker is not local Kafka)."""
        self.flavour: BrokerFlavour = flavour_of(images["kafka"], spec, launcher)
        self.kafka_image_labels: dict[str, str] = {}
        self._backend = backend
        self.run_id = uuid.uuid4().hex[:10]
        self.labels = {LABEL_RUN: self.run_id, LABEL_OWNER: owner_label()}
        self.nodes: tuple[NodeId, ...] = LinkGraph.of(spec).nodes()
        self.bootstrap_servers = ""
        self.zookeeper_connect = ""
        self.quorum_voters: Mapping[int, str] = {}
        self.broker_addresses: Mapping[int, str] = {}
        """KRaft: published host ports of the nodes (`containers_kraft`); ZooKeeper mode: none (the client proxies)."""
        self._kraft: KraftContainers | None = None
        self.topology: Topology | None = None
        self.engine = ""
        self.toxiproxy_version = ""
        self._client: Any = None
        self._network: Any = None
        self._toxiproxy: NodeContainer | None = None
        self._toxi_client: ToxiproxyClient | None = None
        self._containers: dict[NodeId, NodeContainer] = {}
        self._ready: BrokerReadiness | None = None
        self._zk_published: dict[int, tuple[str, int]] = {}
        self.cleaned_leftovers: tuple[CleanedContainer, ...] = ()
        self.security: ClusterSecurity | None = None
        self._down = False

    def client_security(self, user: ClientUser, *, controllers: bool = False) -> ClientSecurity:
        """`base.SecuredAccess`: how `user` connects (plaintext unless `cluster.security` asked otherwise)."""
        return access(self.security, user, controllers=controllers)

    # -- bring-up ---------------------------------------------------------------------------------

    def _start_all(self) -> None:
        from testcontainers.core.network import Network

        deadline = time.monotonic() + self.spec.ready_timeout_s
        self._client = docker_client()
        self.engine = engine_name(self._client)
        prepare_testcontainers(self.engine)
        self.kafka_image_labels = ensure_images(self._client, self.images, self.kafka)
        track_run(self.run_id, self)
        self._network = Network(docker_network_kw={"labels": dict(self.labels)})
        self._network.create()
        prefix = f"kc-{self.run_id}"
        java = find_java(self._backend.environ)
        classpath = ""
        if not self.spec.kraft and self.images["zookeeper"].local:
            from harness.cluster.zookeeper import zookeeper_classpath
            classpath = zookeeper_classpath()
        # 1. toxiproxy with the client proxy ports published; their host ports go into the brokers' configs
        tox = NodeContainer(toxiproxy_spec(self.spec, self.images["toxiproxy"], f"{prefix}-toxiproxy", self.labels),
                            self._network, self.workdir / "toxiproxy", self._backend.stop_timeout_s)
        self._toxiproxy = tox
        self._toxi_client, self.toxiproxy_version, client_ports = start_toxiproxy(tox, self.spec.brokers, deadline)
        host = tox.host_ip()
        self.security = secure(self.spec, self.workdir, self.nodes, host)
        if self.spec.kraft:
            assert self.launcher is not None  # kraft_images refused a cluster without one
            self._kraft = KraftContainers(
                self.spec, self.images["kafka"], self.launcher, labels=self.labels, prefix=prefix,
                workdir=self.workdir, host_ip=host, client_ports=client_ports, containers=self._containers,
                network=self._network, stop_timeout_s=self._backend.stop_timeout_s, security=self.security)
            self.topology = topo = self._kraft.topology
        else:
            self.topology = topo = container_topology(self.spec.brokers, self.spec.zookeepers, host, client_ports)
        create_proxies(self._toxi_client, topo.proxies)
        self.bootstrap_servers = topo.bootstrap_servers
        if self._kraft is not None:  # 2. KRaft: format every node's storage, start controllers, then brokers
            self._kraft.format_storage(self._client, deadline)
            self.quorum_voters, self.broker_addresses = self._kraft.quorum_voters, self._kraft.broker_addresses
            self._kraft.start_all(deadline)
            self._grant_client(deadline)
            (self.workdir / "cluster.json").write_text(json.dumps(self.describe(), indent=2, default=str) + "\n")
            return
        # 2. ZooKeeper, reachable from the host on its published client port (observers, readiness)
        for i in range(1, self.spec.zookeepers + 1):
            node = NodeId.zookeeper(i)
            zspec = zookeeper_spec(self.spec, self.images["zookeeper"], i, f"{prefix}-zk{i}", self.labels,
                                   java=java, classpath=classpath, tick_ms=self._backend.zookeeper_tick_ms)
            self._containers[node] = c = NodeContainer(zspec, self._network, self.workdir / f"zk{i}",
                                                       self._backend.stop_timeout_s)
            c.start()
            self._zk_published[i] = (c.host_ip(), c.mapped_port(2181))
        self.zookeeper_connect = ",".join(f"{h}:{p}" for h, p in self._zk_published.values())
        for i, (h, p) in self._zk_published.items():
            wait_zookeeper(self._containers[NodeId.zookeeper(i)], h, p, deadline, quorum=True)
        if self.security is not None:  # the SCRAM users, before any broker authenticates to another
            assert self.launcher is not None  # check_images refused a secured cluster without the local image
            create_users_in_zookeeper(self.security, self.launcher, self.zookeeper_connect, self.workdir,
                                      self._backend.environ, deadline)
        # 3. brokers
        self._ready = BrokerReadiness(self.zookeeper_connect, hint=BROKER_HINT, security=access(self.security, "admin"))
        for k in range(1, self.spec.brokers + 1):
            bspec = broker_spec(self.spec, self.images["kafka"], topo, k, f"{prefix}-broker{k}", self.labels,
                                self.launcher, self.security)
            self._containers[NodeId.broker(k)] = NodeContainer(bspec, self._network, self.workdir / f"broker-{k}",
                                                               self._backend.stop_timeout_s)
        for k in range(1, self.spec.brokers + 1):
            self._containers[NodeId.broker(k)].start()
        for k in range(1, self.spec.brokers + 1):
            self._wait_broker(k, deadline)
        self._grant_client(deadline)
        (self.workdir / "cluster.json").write_text(json.dumps(self.describe(), indent=2, default=str) + "\n")

    def _grant_client(self, deadline: float) -> None:
        if self.security is not None:
            grant_client(self.security, self.bootstrap_servers, deadline)

    def _wait_broker(self, broker_id: int, deadline: float) -> None:
        assert self._ready is not None
        c = self._containers[NodeId.broker(broker_id)]
        self._ready.wait_ready(broker_id, self._client_proxy(broker_id), deadline,
                               who=f"broker:{broker_id} (container {c.spec.name})", alive=c.is_running,
                               exited=lambda: f"exit code {c.exit_code()}", tail=c.tail)

    def _client_proxy(self, broker_id: int) -> str:
        assert self.topology is not None
        return str(self.topology.proxy(CLIENT, NodeId.broker(broker_id)).advertised)

    # -- nodes ------------------------------------------------------------------------------------

    def container(self, node: NodeId) -> NodeContainer:
        """The node's container (for tests and diagnostics)."""
        if self._down:
            raise BackendError(f"{node}: the cluster was torn down")
        try:
            return self._containers[node]
        except KeyError as exc:
            raise BackendError(f"{node}: no such node in this cluster "
                               f"(nodes: {', '.join(map(str, self.nodes))})") from exc

    def kill(self, node: NodeId) -> None:
        """`docker kill` (SIGKILL): no clean shutdown. No-op if not running."""
        self.container(node).kill()

    def stop(self, node: NodeId) -> None:
        """`docker stop`: SIGTERM (a broker's controlled shutdown), SIGKILL after the stop timeout, and then
        a BackendError saying so. No-op if not running."""
        c = self.container(node)
        if not c.stop():
            raise BackendError(f"{node} (container {c.spec.name}) did not exit within "
                               f"{self._backend.stop_timeout_s:g}s of SIGTERM, so it was SIGKILLed; "
                               f"log ends with:\n{c.tail()}")

    def start(self, node: NodeId) -> None:
        """`docker start` the stopped/killed node (same container, same data) and wait until it is ready."""
        c = self.container(node)
        if c.is_running():
            raise BackendError(f"{node} is already running (container {c.spec.name}); stop or kill it first")
        deadline = time.monotonic() + self.spec.ready_timeout_s
        if self._kraft is not None:
            self._kraft.start(node, deadline)
            return
        if node.role == "broker":
            assert self._ready is not None
            self._ready.wait_stale_gone(node.id, deadline)
            start_until_ready(c, lambda: self._wait_broker(node.id, deadline), deadline)
            return
        c.start()
        h, p = self._zk_published[node.id]
        running = sum(1 for n, x in self._containers.items() if n.role == "zookeeper" and x.is_running())
        wait_zookeeper(c, h, p, deadline, quorum=2 * running > self.spec.zookeepers)

    def pause(self, node: NodeId) -> None:
        """`docker pause`: every process of the node frozen (cgroup freezer), sockets held open."""
        self.container(node).pause()

    def resume(self, node: NodeId) -> None:
        self.container(node).resume()

    def is_running(self, node: NodeId) -> bool:
        """Whether the node's container runs (a paused one counts as running)."""
        return self.container(node).is_running()

    def controller(self) -> int | None:
        """The broker id in ZooKeeper's `/controller` now (None when there is none)."""
        if self.spec.kraft:
            raise BackendError("KRaft: the controller is the quorum leader; ask DescribeQuorum at quorum_voters")
        if self._ready is None:
            raise BackendError("the brokers were never started")
        return self._ready.controller()

    def link(self, src: LinkSource, dst: NodeId) -> Link:
        """The proxy on the toxiproxy container carrying traffic from `src` (a broker, a KRaft controller or
        `client`) to `dst`; in combined KRaft mode both proxies from a broker to a voter broker, as one link."""
        if self.topology is None or self._toxi_client is None:
            raise BackendError("the cluster's proxies were never created")
        routes = self.topology.proxies_between(src, dst)
        if len(routes) == 1:
            return ProcessLink(routes[0].name, self._toxi_client)
        return LinkGroup(tuple(ProcessLink(r.name, self._toxi_client) for r in routes))

    @property
    def toxiproxy(self) -> ToxiproxyClient:
        if self._toxi_client is None:
            raise BackendError("toxiproxy was never started")
        return self._toxi_client

    def describe(self) -> Mapping[str, object]:
        """Engine, images, commands, published ports and the proxy table (for run.json)."""
        nodes: dict[str, object] = {}
        for node, c in self._containers.items():
            entry = c.describe()
            if self._kraft is not None:
                entry.update(self._kraft.describe_node(node))
            elif node.role == "broker" and self.topology is not None:
                entry["advertised"] = {n: str(a) for n, a in self.topology.advertised_listeners(node.id).items()}
            nodes[str(node)] = entry
        return {
            "backend": "containers", "engine": self.engine, "run_id": self.run_id, "labels": dict(self.labels),
            "flavour": {"name": self.flavour.name, "version": self.flavour.version,
                        "description": self.flavour.describe()},
            "broker_choice": self.launcher.reason if self.launcher else f"the image {self.images['kafka'].image}",
            "kafka": None if self.kafka is None else {
                "version": self.kafka.version, "install": str(self.kafka.home), "source": self.kafka.source,
                "image": self.images["kafka"].image, "image_labels": dict(self.kafka_image_labels)},
            "images": {r: {"image": i.image, "local": i.local, "command": list(i.command) if i.command else None}
                       for r, i in self.images.items()},
            "toxiproxy": {"version": self.toxiproxy_version,
                          **(self._toxiproxy.describe() if self._toxiproxy is not None else {})},
            "network": getattr(self._network, "name", None), "mode": self.spec.mode,
            "kraft": self._kraft.describe() if self._kraft is not None else None,
            "bootstrap_servers": self.bootstrap_servers, "zookeeper_connect": self.zookeeper_connect,
            "nodes": nodes, "proxies": [p.as_row() for p in self.topology.proxies] if self.topology else [],
            "workdir": str(self.workdir), "cleaned_leftovers": [str(c) for c in self.cleaned_leftovers],
            "security": self.security.describe() if self.security is not None else None,
        }

    # -- teardown ---------------------------------------------------------------------------------

    def down(self) -> None:
        """Remove every container and the network; attempt every step; TeardownError lists failures."""
        if self._down:
            return
        self._down = True
        failures: list[tuple[str, BaseException]] = []
        if self._ready is not None:
            try:
                self._ready.close()
            except Exception as exc:
                failures.append(("close the ZooKeeper client watching registrations", exc))
        if self._toxi_client is not None:
            try:
                self._toxi_client.close()
            except Exception as exc:
                failures.append(("close the toxiproxy client", exc))
        for node, c in [*self._containers.items(), *([(None, self._toxiproxy)] if self._toxiproxy else [])]:
            try:
                c.remove()
            except Exception as exc:
                failures.append((f"remove container {c.spec.name} ({node or 'toxiproxy'})", exc))
        if self._network is not None and self._network._network is not None:
            try:
                self._network.remove()
            except Exception as exc:
                failures.append((f"remove network {self._network.name}", exc))
        if self._client is not None:
            from harness.cluster.containers_engine import remove_run

            failures += remove_run(self._client, self.run_id)  # anything labelled that escaped the steps above
            try:
                self._client.close()
            except Exception as exc:
                failures.append(("close the Docker client", exc))
        untrack_run(self.run_id)
        if failures:
            raise TeardownError(failures)

    def __enter__(self) -> ContainersCluster:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.down()



if TYPE_CHECKING:  # mypy checks that the classes implement the protocols of harness.cluster.base
    def _implements(backend: ContainersBackend, cluster: ContainersCluster, link: ProcessLink) -> None:
        _b: ClusterBackend = backend
        _c: Cluster = cluster
        _l: Link = link
