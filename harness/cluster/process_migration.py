"""The process backend's part of the ZooKeeper-to-KRaft migration (KIP-866): a ZooKeeper-mode cluster whose KRaft
controllers (`ClusterSpec.migrating`) are ready before any broker starts.

At bring-up, after ZooKeeper and before the brokers: `/cluster/id` is written with the spec's cluster id (what the
first broker would otherwise draw), and the controllers' log directories are formatted with it (`StorageTool
format`, static `controller.quorum.voters`: Kafka checks that every controller is migration-ready only for static
voters, `QuorumFeatures`). The controllers are not started: the migration starts them (`ProcessCluster.start`).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator, Mapping
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException, NodeExistsError
from kazoo.handlers.threading import KazooTimeoutError

from harness.cluster.base import ClusterSpec
from harness.cluster.leftovers import LeftoverRegistry
from harness.cluster.process_flavour import BrokerLauncher
from harness.cluster.process_kraft import KraftNodes
from harness.cluster.render import Topology
from harness.cluster.render_kraft import kraft_cluster_id
from harness.cluster.security import ClusterSecurity
from harness.errors import BackendError
from harness.zk.notifications import decode_cluster_id, encode_cluster_id
from harness.zk.paths import CLUSTER_ID_PATH

MIGRATION_PATH = "/migration"
"""The migration's state znode (`ZkMigrationClient`): the KRaft metadata offset and epoch it has copied up to."""

_QUIET = logging.getLogger("harness.cluster.process_migration.zookeeper")
_QUIET.setLevel(logging.CRITICAL)
_QUIET.propagate = False
_QUIET.addHandler(logging.NullHandler())


@contextlib.contextmanager
def _zookeeper(zookeeper_connect: str, doing: str) -> Iterator[KazooClient]:
    """A short-lived ZooKeeper session; a failure is a BackendError saying what it was `doing`."""
    zk = KazooClient(hosts=zookeeper_connect, timeout=10.0, logger=_QUIET)
    try:
        zk.start(timeout=15.0)
        yield zk
    except (KazooException, KazooTimeoutError) as exc:
        raise BackendError(f"cannot {doing} in ZooKeeper at {zookeeper_connect}: {exc!r}") from exc
    finally:
        zk.stop()
        zk.close()


def claim_cluster_id(zookeeper_connect: str, cluster_id: str) -> str:
    """Write `/cluster/id` unless it exists; the id ZooKeeper holds afterwards."""
    with _zookeeper(zookeeper_connect, f"write {CLUSTER_ID_PATH} for the KRaft controllers of the migration") as zk:
        with contextlib.suppress(NodeExistsError):  # a broker or an earlier bring-up wrote it: that id counts
            zk.create(CLUSTER_ID_PATH, encode_cluster_id(cluster_id), makepath=True)
        data, _ = zk.get(CLUSTER_ID_PATH)
        return decode_cluster_id(data)


def migration_copied(zookeeper_connect: str) -> str | None:
    """None once the metadata copy has ended (`/migration`'s `kraft_metadata_offset` > 0, written by the active
    KRaft controller, `ZkMigrationClient`), else what `/migration` holds."""
    with _zookeeper(zookeeper_connect, f"read {MIGRATION_PATH}") as zk:
        if not zk.exists(MIGRATION_PATH):
            return f"no {MIGRATION_PATH} yet"
        raw = zk.get(MIGRATION_PATH)[0].decode("utf-8", "replace")
    try:
        offset = int(json.loads(raw).get("kraft_metadata_offset", -1))
    except (ValueError, AttributeError, TypeError):
        return f"{MIGRATION_PATH} holds {raw[:200]!r}"
    return None if offset > 0 else f"{MIGRATION_PATH} {raw[:200]}"


def prepare_controllers(spec: ClusterSpec, workdir: Path, topology: Topology, launcher: BrokerLauncher,
                        registry: LeftoverRegistry, environ: Mapping[str, str], stop_timeout_s: float,
                        security: ClusterSecurity | None, zookeeper_connect: str, deadline: float) -> KraftNodes:
    """The migration's controllers, formatted with the cluster id now in ZooKeeper, not started."""
    cluster_id = claim_cluster_id(zookeeper_connect, spec.cluster_id or kraft_cluster_id(0))
    if spec.cluster_id and cluster_id != spec.cluster_id:
        raise BackendError(f"ZooKeeper at {zookeeper_connect} already holds cluster id {cluster_id!r}, not the "
                           f"spec's {spec.cluster_id!r}")
    nodes = KraftNodes(spec, workdir, topology, launcher, registry, environ, stop_timeout_s, security)
    nodes.cluster_id = cluster_id
    nodes.format_storage(deadline)
    return nodes
