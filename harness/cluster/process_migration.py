"""The process backend's part of the ZooKeeper-to-KRaft migration (KIP-866): a ZooKeeper-mode cluster whose KRaft
controllers (`ClusterSpec.migrating`) are ready before any broker starts.

At bring-up, after ZooKeeper and before the brokers: `/cluster/id` is written with the spec's cluster id (what the
first broker would otherwise draw), and the controllers' log directories are formatted with it (`StorageTool
format`, static `controller.quorum.voters`: Kafka checks that every controller is migration-ready only for static
voters, `QuorumFeatures`). The controllers are not started: the migration starts them (`ProcessCluster.start`).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
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

_QUIET = logging.getLogger("harness.cluster.process_migration.zookeeper")
_QUIET.setLevel(logging.CRITICAL)
_QUIET.propagate = False
_QUIET.addHandler(logging.NullHandler())


def claim_cluster_id(zookeeper_connect: str, cluster_id: str) -> str:
    """Write `/cluster/id` unless it exists; the id ZooKeeper holds afterwards."""
    zk = KazooClient(hosts=zookeeper_connect, timeout=10.0, logger=_QUIET)
    try:
        zk.start(timeout=15.0)
        with contextlib.suppress(NodeExistsError):  # a broker or an earlier bring-up wrote it: that id counts
            zk.create(CLUSTER_ID_PATH, encode_cluster_id(cluster_id), makepath=True)
        data, _ = zk.get(CLUSTER_ID_PATH)
        return decode_cluster_id(data)
    except (KazooException, KazooTimeoutError) as exc:
        raise BackendError(f"cannot write {CLUSTER_ID_PATH} to ZooKeeper at {zookeeper_connect} for the KRaft "
                           f"controllers of the migration: {exc!r}") from exc
    finally:
        zk.stop()
        zk.close()


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
