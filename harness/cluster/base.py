"""The `ClusterBackend` / `Cluster` extension points, and the value types every backend shares.

A backend brings up ZooKeeper + N brokers + one Toxiproxy wired as DESIGN.md "Link-level faults:
one listener per source" describes, and hands back a `Cluster`: addresses, nodes, and the node
and link operations that faults map onto. Every `Cluster` is a context manager whose teardown
attempts every step and reports all failures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType, TracebackType
from typing import Literal, Protocol, runtime_checkable

from harness.cluster.client_security import MECHANISMS, PLAINTEXT, ClientSecurity, ClientUser, SaslName
from harness.history.nodes import LinkRef, NodeId, voter_ids
from harness.install.kafka import DEFAULT_LINE, KafkaInstall

CLIENT: Literal["client"] = "client"
LinkSource = NodeId | Literal["client"]


def link_name(src: LinkSource, dst: NodeId) -> str:
    """The Toxiproxy proxy name of a directed link: `1->2`, `1->zk1`, `client->3`, `1->101`, `101->102`
    (the history's `LinkRef` rendering)."""
    return str(LinkRef(None if isinstance(src, str) else src, dst))


@dataclass(frozen=True, slots=True)
class BrokerFlavour:
    """What was tested: Apache Kafka and its version (run.json's `broker`; runs of the retired reference broker
    say `reference` there, which the verifiers still read)."""

    name: Literal["apache-kafka"]
    version: str

    def describe(self) -> str:
        return f"Apache Kafka {self.version}"


def _frozen_map(data: Mapping[str, str] | None = None) -> Mapping[str, str]:
    return MappingProxyType(dict(data or {}))


@dataclass(frozen=True, slots=True)
class SecuritySpec:
    """`cluster.security`: TLS on every listener, a SASL mechanism for every connection, and Kafka's ACL authorizer
    (`harness.cluster.security` builds them; off by default)."""

    tls: bool = False
    sasl: SaslName | None = None
    authorizer: bool = False

    @property
    def enabled(self) -> bool:
        return self.tls or self.sasl is not None

    def describe(self) -> str:
        parts = (["TLS"] if self.tls else []) + ([f"SASL/{MECHANISMS[self.sasl]}"] if self.sasl else []) + (
            ["ACLs"] if self.authorizer else [])
        return "+".join(parts) or "plaintext"


ClusterMode = Literal["zookeeper", "kraft"]
RUN_FIELDS = ("cluster_id", "ready_timeout_s", "fake_clocks", "lazy_fs", "releases")
"""The `ClusterSpec` fields a run sets (from its seed, workload and schedule:
`harness.engine.backend_needs.cluster_spec`); every other field is the cluster's shape, read from `cluster:` or the
`chaos_cluster` marker."""


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """What to bring up: the one cluster spec. An experiment's `cluster:` section and the pytest marker
    `chaos_cluster(**spec)` both read into it (`harness.experiment.cluster_fields`, with the same rules), and
    the backends start from it. `broker_config` uses Kafka's own property names, values as strings. The
    defaults here are the loader's defaults (a `cluster:` key left out)."""

    brokers: int = 3
    zookeepers: int = 1
    """ZooKeeper members (`mode: zookeeper`); the loader sets 0 in KRaft mode."""
    kafka_version: str = DEFAULT_LINE
    """`cluster.kafka`: an Apache Kafka release (`3.9.2`) or line (`3.9`, its newest release; `4`, the newest
    4.x); a Confluent Platform 7.m version (the containers' published images) means Apache Kafka 3.m."""
    mode: ClusterMode = "zookeeper"
    """`zookeeper` (the default on 3.x) or `kraft` (the default, and the only mode, on 4.x)."""
    controllers: int = 0
    """KRaft voters: dedicated controllers 101..100+n, or brokers 1..n when `combined`; 0 in ZooKeeper mode."""
    combined: bool = False
    """KRaft: the voters are brokers 1..controllers (`process.roles=broker,controller`) instead of dedicated
    controller processes 101..100+controllers."""
    cluster_id: str = ""
    """KRaft: the id `kafka-storage format` writes (22 characters of base64url); empty = derived from 0."""
    broker: str = "auto"
    """`auto` or `apache-kafka`: both run Apache Kafka, installed where it is missing
    (`harness.cluster.process_flavour`)."""
    broker_config: Mapping[str, str] = field(default_factory=_frozen_map)
    images: Mapping[str, str] = field(default_factory=_frozen_map)
    features: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    """KRaft: feature levels `kafka-storage format --feature name=level` sets (Kafka 3.8+, KIP-1022), e.g.
    `eligible.leader.replicas.version: 1` (ELR is off by default on 4.0)."""
    ready_timeout_s: float = 90.0
    fake_clocks: bool = False
    """Each broker and KRaft controller runs under libfaketime, so that `clock_skew` can step its wall clock (set by
    the run when its schedule has a clock_skew fault, not a `cluster:` key; process backend;
    `harness.cluster.clocks`)."""
    lazy_fs: bool = False
    """Each broker's and KRaft controller's log directories are on a filesystem that keeps only what was fsynced
    across a power loss (`harness.cluster.lazyfs`, FUSE), so that `power_loss` can lose the rest and `disk_error` can
    fail I/O (set by the run when its schedule has either fault, not a `cluster:` key; process backend, as root)."""
    releases: tuple[str, ...] = ()
    """More Apache Kafka releases the run starts brokers on (`upgrade` operations: set by the run, not a
    `cluster:` key); the process backend installs them at bring-up."""
    log_dirs: int = 1
    """`cluster.log_dirs`: log directories per broker (and KRaft controller), Kafka's JBOD (KIP-112)."""
    security: SecuritySpec = SecuritySpec()
    """`cluster.security`: TLS, SASL users and ACLs on every listener (process backend)."""
    log_dir_mb: int = 0
    """`cluster.log_dir_mb`: each broker's and KRaft controller's log directory is a tmpfs of this many MB, which
    the `disk_full` fault fills (process backend, as root; `harness.cluster.disks`); 0: a plain directory."""

    @property
    def kraft(self) -> bool:
        return self.mode == "kraft"

    @property
    def migrating(self) -> bool:
        """ZooKeeper mode with `controllers` > 0 (the loader allows it only with a `migrate_to_kraft`): dedicated
        KRaft controllers 101..100+controllers, formatted with the cluster's id and not started at bring-up, the
        cluster the ZooKeeper-to-KRaft migration (KIP-866) starts from (process backend)."""
        return not self.kraft and self.controllers > 0 and not self.combined

    def voter_ids(self) -> tuple[int, ...]:
        """The KRaft quorum's node ids (empty in ZooKeeper mode, unless `migrating`)."""
        return voter_ids(self.controllers, self.combined) if self.kraft or self.migrating else ()


@runtime_checkable
class Link(Protocol):
    """One directed link's proxy (`src->dst`). Toxic attributes use Toxiproxy's names."""

    name: str

    def disable(self) -> None: ...

    def enable(self) -> None: ...

    def add_toxic(
        self, kind: str, attributes: Mapping[str, float | int], *, stream: str = "downstream",
        toxicity: float = 1.0, name: str | None = None,
    ) -> str: ...

    def remove_toxic(self, name: str) -> None: ...


class LinkGroup:
    """Several proxies acting as one directed link (combined KRaft mode: broker k's data link `k->j` and its
    quorum link `k->j.quorum` to voter broker j). Every operation is applied to each member."""

    def __init__(self, members: tuple[Link, ...]) -> None:
        self.members = members
        self.name = "+".join(m.name for m in members)

    def disable(self) -> None:
        for m in self.members:
            m.disable()

    def enable(self) -> None:
        for m in self.members:
            m.enable()

    def add_toxic(
        self, kind: str, attributes: Mapping[str, float | int], *, stream: str = "downstream",
        toxicity: float = 1.0, name: str | None = None,
    ) -> str:
        names = {m.add_toxic(kind, attributes, stream=stream, toxicity=toxicity, name=name) for m in self.members}
        if len(names) != 1:
            raise ValueError(f"link {self.name}: toxic {kind} got different names {sorted(names)}; give it a name")
        return names.pop()

    def remove_toxic(self, name: str) -> None:
        for m in self.members:
            m.remove_toxic(name)


@runtime_checkable
class Cluster(Protocol):
    """A running cluster. Node operations raise `BackendError` naming the node on failure."""

    bootstrap_servers: str
    """Client bootstrap list (through the `client->j` proxies)."""
    zookeeper_connect: str
    """Direct ZooKeeper connect string for observers (not through any proxy); empty in KRaft mode."""
    quorum_voters: Mapping[int, str]
    """KRaft: voter node id -> the direct `host:port` of its own controller listener, for observers (no proxy);
    empty in ZooKeeper mode."""
    broker_addresses: Mapping[int, str]
    """Broker id -> its EXTERNAL listener's direct `host:port`, for observers (no proxy)."""
    nodes: tuple[NodeId, ...]
    flavour: BrokerFlavour

    def kill(self, node: NodeId) -> None: ...  # SIGKILL / docker kill

    def stop(self, node: NodeId) -> None: ...  # SIGTERM: controlled shutdown, waits for exit

    def start(self, node: NodeId) -> None: ...  # (re)start a stopped or killed node, waits until ready

    def pause(self, node: NodeId) -> None: ...  # SIGSTOP / docker pause

    def resume(self, node: NodeId) -> None: ...

    def is_running(self, node: NodeId) -> bool: ...

    def link(self, src: LinkSource, dst: NodeId) -> Link: ...

    def describe(self) -> Mapping[str, object]: ...  # versions, images/distribution, ports: for run.json

    def down(self) -> None: ...

    def __enter__(self) -> Cluster: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


@runtime_checkable
class DiskControl(Protocol):
    """What a cluster whose log directories are size-limited (`ClusterSpec.log_dir_mb`) offers the disk faults."""

    def fill_disk(self, node: NodeId, directory: int = 0) -> int: ...  # later writes there fail (ENOSPC)

    def free_disk(self, node: NodeId, directory: int = 0) -> None: ...


@dataclass(frozen=True, slots=True)
class UnsyncedLoss:
    """What a power loss took from one node's log directories: the bytes each file lost (its unsynced writes, by
    path under the node's home) and the entries removed (created or renamed since their directory's last fsync)."""

    lost: Mapping[str, int]
    removed: tuple[str, ...]

    @property
    def lost_bytes(self) -> int:
        return sum(self.lost.values())


@runtime_checkable
class PowerControl(Protocol):
    """What a cluster whose log directories keep only fsynced writes across a crash (`ClusterSpec.lazy_fs`) offers
    the power_loss fault."""

    def power_loss(self, *nodes: NodeId) -> tuple[UnsyncedLoss, ...]: ...  # SIGKILL all, then unsynced writes go


@runtime_checkable
class DiskErrorControl(Protocol):
    """What a cluster whose log directories are on the power-loss filesystem (`ClusterSpec.lazy_fs`) offers the
    disk_error fault: I/O there failing with an errno."""

    def fail_disk_io(self, node: NodeId, directory: int, error: int, ops: tuple[str, ...], probability: float,
                     pattern: str | None, seed: int) -> None: ...

    def heal_disk_io(self, node: NodeId, directory: int) -> int: ...  # the operations that failed


@runtime_checkable
class PacketControl(Protocol):
    """What a cluster offers the packet faults: a fraction of a link's packets dropped, its connections left open."""

    def drop_packets(self, src: LinkSource, dst: NodeId, probability: float) -> str: ...  # a handle

    def stop_dropping(self, handle: str) -> None: ...


@runtime_checkable
class SecuredAccess(Protocol):
    """What a secured cluster (`ClusterSpec.security`) offers its clients: how each user connects (`admin`: the
    harness's observers, operators and tools; `client`: the workloads)."""

    def client_security(self, user: ClientUser, *, controllers: bool = False) -> ClientSecurity: ...


def client_access(cluster: object, user: ClientUser = "client", *, controllers: bool = False) -> ClientSecurity:
    """How `user` connects to `cluster` (to the KRaft controllers' own listeners with `controllers`, which take
    SASL/PLAIN): `PLAINTEXT` unless the cluster is secured."""
    return cluster.client_security(user, controllers=controllers) if isinstance(cluster, SecuredAccess) else PLAINTEXT


@runtime_checkable
class ClockControl(Protocol):
    """What a cluster whose nodes run on fake clocks (`ClusterSpec.fake_clocks`) offers the clock faults."""

    def skew_clock(self, node: NodeId, offset_s: int) -> None: ...  # 0: the real time again


@dataclass(frozen=True, slots=True)
class MetadataLogs:
    """Where a cluster's KRaft controllers keep their metadata logs on this host (each one's
    `__cluster_metadata-0`), and the Kafka install and java whose `kafka-dump-log` reads them."""

    dirs: tuple[Path, ...]
    install: KafkaInstall
    java: str


@runtime_checkable
class MetadataLogAccess(Protocol):
    """What a cluster whose KRaft controllers' metadata logs stay readable on this host after `down()` offers
    (the process backend's: they are in the run directory). None: it has no KRaft controllers."""

    def metadata_logs(self) -> MetadataLogs | None: ...


@runtime_checkable
class ClusterBackend(Protocol):
    """Brings clusters up. `available()` answers whether it can run here and why (or why not)."""

    name: str

    def available(self) -> tuple[bool, str]: ...

    def up(self, spec: ClusterSpec, workdir: Path) -> Cluster: ...
