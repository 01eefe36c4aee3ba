"""The process backend's cluster (`ProcessCluster`; `process_backend.ProcessBackend` brings it up): the containers
topology as local processes.

ZooKeeper mode: ZooKeeper (1, 3 or 5 members, `harness.cluster.zookeeper`) and N brokers (Apache Kafka
from `KAFKA_HOME` or the cache, `process_flavour`). KRaft mode: C voters
(dedicated controllers or combined brokers) and N brokers of Apache Kafka (`process_kraft`). The migration's
cluster: ZooKeeper mode plus C KRaft controllers, started and moved through the phases by `start` and `migrate`
(`process_migration`, `render_migration`). All with
one Toxiproxy (`TOXIPROXY_BIN` or the embedded server, `process_toxiproxy`), wired as DESIGN.md
"Link-level faults: one listener per source" (`render`, `process_topology`). Faults are signals to
process groups and proxy operations. Every child runs in its own process group, is recorded for
`clean_leftovers()`, and is killed on every exit path.

Layout under `workdir/`: `broker-<k>/{server.properties,data/,broker.log,logs/}`,
`controller-<id>/{server.properties,data/,controller.log,logs/}` (KRaft), `zookeeper/zk<i>/`,
`toxiproxy/toxiproxy.log`, `cluster.json` (what `describe()` returns).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Protocol

from harness.cluster.base import (
    BrokerFlavour,
    ClusterSpec,
    Link,
    LinkGroup,
    LinkSource,
    MetadataLogs,
    NodeId,
    link_name,
)
from harness.cluster.client_security import ClientSecurity, ClientUser
from harness.cluster.disks import LogDirMounts, kafka_log_dirs
from harness.cluster.leftovers import CleanedLeftover, LeftoverRegistry, leftovers_dir
from harness.cluster.links import LinkGraph
from harness.cluster.packets import PacketRules
from harness.cluster.process_brokers import BrokerNodes
from harness.cluster.process_disks import NodeDisks
from harness.cluster.process_flavour import (
    BrokerLauncher,
    java_version,
    switched_launcher,
    zookeeper_jar_version,
)
from harness.cluster.process_kraft import KraftNodes
from harness.cluster.process_migration import migration_copied, prepare_controllers
from harness.cluster.process_node import ManagedProcess
from harness.cluster.process_security import create_zookeeper_users, grant_client, secure
from harness.cluster.process_topology import process_topology
from harness.cluster.process_toxiproxy import ToxiproxyProcess
from harness.cluster.render import EXTERNAL, Topology, ZooKeeperEndpoint
from harness.cluster.render_migration import BrokerPhase
from harness.cluster.security import ClusterSecurity, access
from harness.cluster.zookeeper import ZooKeeperEnsemble, ZooKeeperMember, zookeeper_classpath
from harness.errors import BackendError, ConfigError, TeardownError

HOST = "127.0.0.1"


class BackendSettings(Protocol):
    """What a `ProcessCluster` reads of the backend that brought it up (`process_backend.ProcessBackend`)."""

    @property
    def environ(self) -> Mapping[str, str]: ...

    @property
    def stop_timeout_s(self) -> float: ...

    @property
    def zookeeper_tick_ms(self) -> int: ...

    @property
    def leftovers_dir(self) -> Path | None: ...


class ProcessCluster(NodeDisks):
    """A running process cluster (implements `harness.cluster.base.Cluster`)."""

    def __init__(self, spec: ClusterSpec, workdir: Path, *, launcher: BrokerLauncher, java: str,
                 backend: BackendSettings, releases: Mapping[str, BrokerLauncher] | None = None) -> None:
        self.spec = spec
        self._releases = dict(releases or {})
        """The launcher of each release an upgrade may switch a node to (`reconfigure`), made at bring-up."""
        self.workdir = workdir.resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.flavour: BrokerFlavour = launcher.flavour
        self.launcher = launcher
        self.java = java
        self._backend = backend
        self._registry = LeftoverRegistry(backend.leftovers_dir)
        self._toxiproxy: ToxiproxyProcess | None = None
        self._ensemble: ZooKeeperEnsemble | None = None
        self._brokers: BrokerNodes | None = None
        self._kraft: KraftNodes | None = None
        self.topology: Topology | None = None
        self.nodes: tuple[NodeId, ...] = LinkGraph.of(spec).nodes()
        self.bootstrap_servers = ""
        self.zookeeper_connect = ""
        self.quorum_voters: Mapping[int, str] = {}
        self.broker_addresses: Mapping[int, str] = {}
        self._classpath = ""
        self._java_version_text = ""
        self.cleaned_leftovers: tuple[CleanedLeftover, ...] = ()
        self._mounts = LogDirMounts(backend.leftovers_dir or leftovers_dir(), self._registry)
        self._packets = PacketRules()
        self._down = False
        self.security: ClusterSecurity | None = None

    def client_security(self, user: ClientUser, *, controllers: bool = False) -> ClientSecurity:
        """`base.SecuredAccess`: how `user` connects (plaintext unless `cluster.security` asked otherwise)."""
        return access(self.security, user, controllers=controllers)

    # -- bring-up ---------------------------------------------------------------------------------

    def _start_all(self) -> None:
        deadline = time.monotonic() + self.spec.ready_timeout_s
        env = self._backend.environ
        self._toxiproxy = ToxiproxyProcess(
            self.workdir / "toxiproxy", self._registry, HOST, binary=env.get("TOXIPROXY_BIN") or None)
        self._toxiproxy.start(timeout_s=max(1.0, deadline - time.monotonic()))
        self._mount_log_dirs(self.nodes)
        self.security = secure(self.spec, self.workdir, self.nodes)
        if self.spec.kraft:
            self.topology = process_topology(self.spec, (), self._toxiproxy, HOST)
            self.bootstrap_servers = self.topology.bootstrap_servers
            self._kraft = KraftNodes(self.spec, self.workdir, self.topology, self.launcher, self._registry, env,
                                     self._backend.stop_timeout_s, self.security)
            self._kraft.format_storage(deadline)
            self._kraft.start_all(deadline)
        else:
            self._start_zookeeper(deadline)
            assert self._ensemble is not None
            zks = tuple(ZooKeeperEndpoint(m.id, m.host, m.client_port) for m in self._ensemble.members)
            self.zookeeper_connect = ",".join(str(z.address) for z in zks)
            self.topology = process_topology(self.spec, zks, self._toxiproxy, HOST)
            self.bootstrap_servers = self.topology.bootstrap_servers
            if self.security is not None:
                create_zookeeper_users(self.security, self.launcher, self.zookeeper_connect, self.workdir,
                                       self._registry, env, deadline)
            if self.spec.migrating:  # its KRaft controllers, formatted and not started
                self._kraft = prepare_controllers(self.spec, self.workdir, self.topology, self.launcher,
                                                  self._registry, env, self._backend.stop_timeout_s, self.security,
                                                  self.zookeeper_connect, deadline)
            self._brokers = BrokerNodes(self.spec, self.workdir, self.topology, self.launcher, self._registry,
                                        env, self.zookeeper_connect, self._backend.stop_timeout_s, self.security)
            self._brokers.start_all(deadline)
        if self.security is not None:
            grant_client(self.security, self.bootstrap_servers, deadline)
        self.quorum_voters = {c.node.id: str(c.own) for c in self.topology.controllers}
        self.broker_addresses = {b.broker_id: str(b.address(EXTERNAL)) for b in self.topology.brokers}
        (self.workdir / "cluster.json").write_text(json.dumps(self.describe(), indent=2, default=str) + "\n")

    def _start_zookeeper(self, deadline: float) -> None:
        self._classpath = zookeeper_classpath()
        tick = self._backend.zookeeper_tick_ms
        raw = self.spec.broker_config.get("zookeeper.session.timeout.ms", "18000")
        try:
            session_ms = int(raw)
        except ValueError as exc:
            raise ConfigError(f"broker_config zookeeper.session.timeout.ms={raw!r} is not an integer") from exc
        self._ensemble = ZooKeeperEnsemble(
            self.spec.zookeepers, self.workdir / "zookeeper", tick_ms=tick, java=self.java,
            classpath=self._classpath, min_session_timeout_ms=2 * tick,
            max_session_timeout_ms=max(60000, 2 * session_ms), bind_host=HOST, registry=self._registry)
        for m in self._ensemble.members:
            m.start()
        for m in self._ensemble.members:
            m.wait_serving(max(0.5, deadline - time.monotonic()))

    # -- nodes ------------------------------------------------------------------------------------

    def _check(self, node: NodeId) -> None:
        if self._down:
            raise BackendError(f"{node}: the cluster was torn down")
        if node not in self.nodes:
            raise BackendError(f"{node}: no such node in this cluster (nodes: {', '.join(map(str, self.nodes))})")

    def _member(self, node: NodeId) -> ZooKeeperMember:
        assert self._ensemble is not None
        return self._ensemble.member(node.id)

    def _broker_nodes(self) -> BrokerNodes:
        if self._brokers is None:
            raise BackendError("the brokers were never started")
        return self._brokers

    def _kraft_owns(self, node: NodeId) -> bool:
        """Whether `node` is a KRaft node (`process_kraft`): in KRaft mode every one, in a migration's cluster its
        controllers."""
        return self._kraft is not None and (self._brokers is None or node.role == "controller")

    def _kafka_process(self, node: NodeId) -> ManagedProcess:
        """A broker's or KRaft controller's process."""
        if self._kraft is not None and self._kraft_owns(node):
            return self._kraft.process(node)
        return self._broker_nodes().process(node.id)

    def kill(self, node: NodeId) -> None:
        """SIGKILL the node's process group (no clean shutdown) and reap it. No-op if not running."""
        self._handle(node).kill()

    def stop(self, node: NodeId) -> None:
        """SIGTERM and wait for exit (a broker's controlled shutdown); SIGKILL after the stop timeout,
        and then a BackendError saying so (it was not a clean stop). No-op if not running."""
        self._check(node)
        if self._kraft is not None and self._kraft_owns(node):
            self._kraft.stop(node)
        elif node.role == "broker":
            self._broker_nodes().stop(node.id)
        else:
            self._member(node).stop(self._backend.stop_timeout_s)

    def reconfigure(self, node: NodeId, *, kafka: str | None = None, config: Mapping[str, str] | None = None) -> str:
        """`operations.ReleaseSwitch`: from its next start, `node` (a broker, or a KRaft controller) runs release
        `kafka` (installed at bring-up, `ClusterSpec.releases`) with `config` over its properties (ZooKeeper mode)."""
        self._check(node)
        launcher = None
        if kafka is not None:
            if kafka not in self._releases:  # not announced in ClusterSpec.releases: installed now, once
                self._releases[kafka] = switched_launcher(self.launcher, kafka, self._backend.environ)
            launcher = self._releases[kafka]
        if self._kraft is not None and self._kraft_owns(node):
            if config:
                raise BackendError(f"{node}: KRaft nodes change release, not properties, in an upgrade")
            return self._kraft.reconfigure(node, launcher)
        if node.role != "broker":
            raise BackendError(f"{node}: only brokers change release in ZooKeeper mode")
        return self._broker_nodes().reconfigure(node.id, launcher, config or {})

    def migrate(self, node: NodeId, phase: BrokerPhase = "migrating") -> str:
        """From its next start, stopped broker `node` takes its migration phase `phase` (`render_migration`), or a
        migration's stopped controller runs without the migration (any phase); what it will run, in words."""
        self._check(node)
        if node.role == "controller" and self._kraft is not None and self._brokers is not None:
            return self._kraft.end_migration(node)
        if node.role != "broker" or self._brokers is None or not self.spec.migrating:
            raise BackendError(f"{node}: not a node of a ZooKeeper-to-KRaft migration's cluster")
        return self._brokers.reconfigure(node.id, None, {}, phase=phase)

    def migration_copied(self) -> str | None:
        """None once a migration's metadata copy has ended, else what `/migration` holds (`process_migration`)."""
        return migration_copied(self.zookeeper_connect)

    def start(self, node: NodeId) -> None:
        """Restart a stopped/killed node with the same config and data, and wait until it is ready.

        A broker is ready when registered in /brokers/ids and answering Metadata through its client
        proxy. A ZooKeeper member is ready when it serves, if a majority of members now runs;
        otherwise (no quorum possible yet) when its client port accepts connections.
        """
        self._check(node)
        timeout = self.spec.ready_timeout_s
        if self._kraft is not None and self._kraft_owns(node):
            self._kraft.start(node, time.monotonic() + timeout)
            return
        if node.role == "broker":
            self._broker_nodes().start(node.id, time.monotonic() + timeout)
            return
        member = self._member(node)
        if member.is_running:
            raise BackendError(f"{node} is already running (pid {member.pid}); stop or kill it first")
        member.start()
        assert self._ensemble is not None
        running = sum(1 for m in self._ensemble.members if m.is_running)
        if 2 * running > len(self._ensemble.members):
            member.wait_serving(timeout)
        else:
            member.wait_listening(timeout)

    def drop_packets(self, src: LinkSource, dst: NodeId, probability: float) -> str:
        """Drop `probability` of the packets on link src->dst (its proxy's listener, both ways); a handle."""
        self._check(dst)
        if self.topology is None:
            raise BackendError("the cluster was never started")
        return self._packets.drop(self.topology.proxy(src, dst).listen.port, probability, link_name(src, dst))

    def stop_dropping(self, handle: str) -> None:
        self._packets.undrop(handle)

    def _handle(self, node: NodeId) -> ManagedProcess | ZooKeeperMember:
        self._check(node)
        return self._member(node) if node.role == "zookeeper" else self._kafka_process(node)

    def pause(self, node: NodeId) -> None:
        """SIGSTOP the node's process group; returns once every thread of the node is stopped."""
        self._handle(node).pause()

    def resume(self, node: NodeId) -> None:
        """SIGCONT the node's process group."""
        self._handle(node).resume()

    def is_running(self, node: NodeId) -> bool:
        """Whether the node's process exists (a paused node counts as running)."""
        handle = self._handle(node)
        return handle.is_running() if isinstance(handle, ManagedProcess) else handle.is_running

    def pid(self, node: NodeId) -> int | None:
        """The node's current process id (None if never started)."""
        return self._handle(node).pid

    def log_path(self, node: NodeId) -> Path:
        return self._handle(node).log_path

    def zookeeper_mode(self, node: NodeId) -> str | None:
        """What ZooKeeper member `node` reports now: leader / follower / standalone, None if not serving."""
        self._check(node)
        if node.role != "zookeeper":
            raise BackendError(f"{node} is not a ZooKeeper member")
        return self._member(node).mode()

    @property
    def toxiproxy(self) -> ToxiproxyProcess:
        """The cluster's Toxiproxy (its API client creates extra proxies, e.g. for observers under test)."""
        if self._toxiproxy is None:
            raise BackendError("toxiproxy was never started")
        return self._toxiproxy

    def link(self, src: LinkSource, dst: NodeId) -> Link:
        """The proxy carrying traffic from `src` (a broker, a KRaft controller or `client`) to `dst`; in
        combined KRaft mode both proxies from a broker to a voter broker (data and quorum), as one link."""
        if self.topology is None or self._toxiproxy is None:
            raise BackendError("the cluster's proxies were never created")
        routes = self.topology.proxies_between(src, dst)
        if len(routes) == 1:
            return self._toxiproxy.link(routes[0].name)
        return LinkGroup(tuple(self._toxiproxy.link(r.name) for r in routes))

    def metadata_logs(self) -> MetadataLogs | None:
        """The KRaft controllers' metadata logs (`__cluster_metadata-0` in each one's first log directory), which
        stay in the working directory after `down()`; None without dedicated KRaft controllers."""
        voters = self.topology.controllers if self.topology is not None else ()
        nodes = [c.node for c in voters if c.node.role == "controller"]
        if self._kraft is None or not nodes:
            return None
        dirs = tuple(kafka_log_dirs(self.workdir, n, self.spec.log_dirs)[0] / "__cluster_metadata-0" for n in nodes)
        return MetadataLogs(dirs, self.launcher.kafka, self.java)

    def describe(self) -> Mapping[str, object]:
        """Versions, distribution, ports, pids and the proxy table (for run.json)."""
        nodes: dict[str, object] = {}
        if self._brokers is not None:
            nodes.update(self._brokers.describe())
        if self._kraft is not None:
            nodes.update(self._kraft.describe())
        if self._ensemble is not None:
            for m in self._ensemble.members:
                nodes[str(NodeId.zookeeper(m.id))] = {
                    "pid": m.pid, "client": m.address, "peer_port": m.peer_port,
                    "election_port": m.election_port, "dir": str(m.directory)}
        return {
            "backend": "process",
            "flavour": {"name": self.flavour.name, "version": self.flavour.version,
                        "description": self.flavour.describe()},
            "versions": {
                "java": self._java_version(), "java_path": self.java,
                "zookeeper": zookeeper_jar_version(self._classpath) if self._classpath else "unknown",
                "kafka": self.flavour.version,
                "kafka_home": str(self.launcher.kafka.home),
                "kafka_source": self.launcher.kafka.source,
            },
            "broker_choice": self.launcher.reason,
            "mode": self.spec.mode,
            "kraft": {"cluster_id": self._kraft.cluster_id, "voters": list(self.spec.voter_ids()),
                      "combined": self.spec.combined} if self._kraft is not None else None,
            "toxiproxy": self._toxiproxy.describe() if self._toxiproxy is not None else None,
            "bootstrap_servers": self.bootstrap_servers,
            "zookeeper_connect": self.zookeeper_connect,
            "security": self.security.describe() if self.security is not None else None,
            "nodes": nodes,
            "proxies": [p.as_row() for p in self.topology.proxies] if self.topology else [],
            "workdir": str(self.workdir),
            "cleaned_leftovers": [{"what": c.what, "pid": c.pid, "argv": list(c.cmdline), "owner_pid": c.owner_pid}
                                  for c in self.cleaned_leftovers],
        }

    def _java_version(self) -> str:
        if not self._java_version_text:
            self._java_version_text = java_version(self.java)
        return self._java_version_text

    # -- teardown ---------------------------------------------------------------------------------

    def down(self) -> None:
        """Kill every broker, ZooKeeper member and the Toxiproxy; attempt every step; TeardownError."""
        if self._down:
            return
        self._down = True
        failures: list[tuple[str, BaseException]] = []
        if self._brokers is not None:
            failures += self._brokers.close()
        if self._kraft is not None:
            failures += self._kraft.close()
        if self._ensemble is not None:
            try:
                self._ensemble.close()
            except TeardownError as exc:
                failures += exc.failures
            except Exception as exc:
                failures.append(("close zookeeper ensemble", exc))
        failures += self._mounts.unmount_all()
        failures += self._packets.remove_all()
        if self._toxiproxy is not None:
            try:
                self._toxiproxy.close()
            except Exception as exc:
                failures.append(("stop toxiproxy", exc))
        try:
            self._registry.close()
        except Exception as exc:
            failures.append(("kill recorded leftovers", exc))
        if failures:
            raise TeardownError(failures)

    def __enter__(self) -> ProcessCluster:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.down()
