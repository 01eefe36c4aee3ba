"""Faults below the network, on a node's disk: `disk_full`. The node's log directory (a tmpfs of
`cluster.log_dir_mb`, `harness.cluster.disks`) is filled, so that every write Kafka makes there fails with ENOSPC.

What Kafka does then (docs/kafka-behaviour.md, D1): the failed write marks the log directory offline
(`LogDirFailureChannel`, KIP-112); the broker stops serving the replicas in it and tells the controller, which
elects new leaders; a broker whose every log directory has failed halts (`LogManager.handleLogDirFailure`:
"Shutdown broker because all log dirs ... have failed"). So with one log directory the node exits. The heal frees
the space and, if the node has exited, starts it again, as an operator who cleared the disk would."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from harness.cluster.base import DiskControl, NodeId
from harness.errors import HarnessError
from harness.faults.kind import Applied, FaultEnv, KindSpec, attempt, effect
from harness.faults.resolve import resolve_node

if TYPE_CHECKING:
    from harness.faults.schedule import PlannedFault


def _disks(env: FaultEnv) -> DiskControl:
    if not isinstance(env.cluster, DiskControl):
        raise HarnessError(f"disk faults need the process backend with cluster.log_dir_mb; this cluster "
                           f"({type(env.cluster).__name__}) has no size-limited log directories")
    return env.cluster


@dataclass(frozen=True, slots=True)
class DiskFull:
    """Fill the node's log directory; heal: free it, and start the node if it has exited meanwhile."""

    spec: KindSpec

    def brings_nodes_back(self) -> bool:
        """At teardown the heal is skipped (`BringsNodesBack`): the tmpfs, filler and all, goes with the cluster, and
        starting a halted broker only to stop it again would cost the seconds a signalled run must not spend."""
        return True

    def apply(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> None:
        assert fault.target is not None
        node = resolve_node(fault.target, env.state, env.topology)
        if not isinstance(node, NodeId) or node.role == "zookeeper":
            raise HarnessError(f"{node}: disk_full fills a broker's or KRaft controller's log directory")
        disks = _disks(env)
        done.targets.append(str(node))
        done.nodes.append(node)
        disks.fill_disk(node)

    def heal(self, env: FaultEnv, done: Applied) -> list[tuple[str, BaseException]]:
        steps: list[tuple[str, Callable[[], None]]] = []
        for node in done.nodes:
            assert isinstance(node, NodeId)
            steps.append((f"start {node} if it exited", partial(_start_if_exited, env, node)))
            steps.append((f"free the log directory of {node}", partial(_free, env, node)))
        return attempt(steps)  # latest first: free, then start

    def describe(self, fault: PlannedFault, done: Applied) -> dict[str, Any]:
        return effect(nodes=done.nodes)


def _free(env: FaultEnv, node: NodeId) -> None:
    _disks(env).free_disk(node)


def _start_if_exited(env: FaultEnv, node: NodeId) -> None:
    if not env.cluster.is_running(node):
        env.cluster.start(node)


DISK_KINDS: tuple[DiskFull, ...] = (
    DiskFull(KindSpec(
        "disk_full", "Fill a broker's (or KRaft controller's) log directory: every later write there fails with "
        "ENOSPC. Kafka takes the directory offline (KIP-112): its replicas go offline and lead elsewhere, and a node "
        "whose only log directory failed halts. Needs cluster.log_dir_mb (a tmpfs per log directory).",
        frozenset({"broker", "controller"}), (), "required", "disk",
        "frees the space, and starts the node again if it exited",
        MappingProxyType({"process": "a filler file takes the free space of the node's tmpfs log directory",
                          "containers": "not available: needs the process backend (cluster.log_dir_mb)"}))),
)
"""The disk kinds, in `kafka-chaos faults` order."""
