"""Faults below the network, on a node's disk: `disk_full`, `disk_error` and `power_loss`.

`disk_full`: the node's log directory (a tmpfs of `cluster.log_dir_mb`, `harness.cluster.disks`) is filled, so that
every write Kafka makes there fails with ENOSPC.

What Kafka does then (docs/kafka-behaviour.md, D1): the failed write marks the log directory offline
(`LogDirFailureChannel`, KIP-112); the broker stops serving the replicas in it and tells the controller, which
elects new leaders; a broker whose every log directory has failed halts (`LogManager.handleLogDirFailure`:
"Shutdown broker because all log dirs ... have failed"). So with one log directory the node exits. The heal frees
the space and, if the node has exited, starts it again, as an operator who cleared the disk would.

`disk_error`: I/O under one of the node's log directories (on the power-loss filesystem, `harness.cluster.lazyfs`)
fails with an errno, EIO by default: reads, writes or both, with a probability, optionally only for paths matching a
glob (one partition's directory, the index files). Kafka takes a directory offline at the first I/O error it meets
there as at ENOSPC (D1); the heal stops the errors and starts or restarts the node as disk_full's does.

`power_loss`: the node dies at once (SIGKILL) and every write it made that was not fsynced is gone, with LazyFS's
semantics (`harness.cluster.lazyfs`): each file's unsynced writes are undone, and an entry created or renamed since
its directory's last fsync is removed. Several power_loss faults at the same instant are a correlated power loss
(every replica of a partition). The heal starts the node again, and Kafka recovers its logs as after any crash. Its
effect says what each node lost (`lost`: bytes and files), so that a lost write can be tied to it
(docs/kafka-behaviour.md, D3-D4)."""

from __future__ import annotations

import errno
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from harness.cluster.base import DiskControl, DiskErrorControl, NodeId, PowerControl, UnsyncedLoss
from harness.errors import HarnessError
from harness.faults.kind import Applied, FaultEnv, KindSpec, ParamSpec, attempt, effect, node_ref
from harness.faults.resolve import resolve_node

if TYPE_CHECKING:
    from harness.faults.schedule import PlannedFault


def _disks(env: FaultEnv) -> DiskControl:
    if not isinstance(env.cluster, DiskControl):
        raise HarnessError(f"disk faults need the process backend with cluster.log_dir_mb; this cluster "
                           f"({type(env.cluster).__name__}) has no size-limited log directories")
    return env.cluster


@dataclass(frozen=True, slots=True)
class _DirectoryFault:
    """A fault on one of a node's log directories (`params.dir`): `_act` when it fires; at the heal `_undo`, then the
    node started again (restarted, gracefully, if it kept running on its other log directories)."""

    spec: KindSpec
    _active: dict[int, int] = field(default_factory=dict, compare=False)
    """The directory each active fault acts on, by its `Applied` (the heal undoes that one)."""

    def brings_nodes_back(self) -> bool:
        """At teardown the heal is skipped (`BringsNodesBack`): the mounts go with the cluster, and starting a halted
        broker only to stop it again would cost the seconds a signalled run must not spend."""
        return True

    def apply(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> None:
        assert fault.target is not None
        node = resolve_node(fault.target, env.state, env.topology)
        if not isinstance(node, NodeId) or node.role == "zookeeper":
            raise HarnessError(f"{node}: {self.spec.name} acts on a broker's or KRaft controller's log directory")
        directory = int(fault.spec.params.get("dir", 0))
        done.targets.append(str(node))
        done.nodes.append(node)
        self._act(env, node, directory, fault)
        self._active[id(done)] = directory

    def heal(self, env: FaultEnv, done: Applied) -> list[tuple[str, BaseException]]:
        directory = self._active.pop(id(done), 0)
        steps: list[tuple[str, Callable[[], None]]] = []
        for node in done.nodes:
            assert isinstance(node, NodeId)
            steps.append((f"start {node} again", partial(_start_again, env, node)))
            steps.append((f"{self._undoing} log directory {directory} of {node}",
                          partial(self._undo, env, node, directory)))
        return attempt(steps)  # latest first: undo, then start

    def describe(self, fault: PlannedFault, done: Applied) -> dict[str, Any]:
        return effect(nodes=done.nodes)

    _undoing = "heal"

    def _act(self, env: FaultEnv, node: NodeId, directory: int, fault: PlannedFault) -> None:
        raise NotImplementedError

    def _undo(self, env: FaultEnv, node: NodeId, directory: int) -> None:
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class DiskFull(_DirectoryFault):
    """Fill the node's log directory; heal: free it, and start the node if it has exited meanwhile."""

    _undoing = "free"

    def _act(self, env: FaultEnv, node: NodeId, directory: int, fault: PlannedFault) -> None:
        _disks(env).fill_disk(node, directory)

    def _undo(self, env: FaultEnv, node: NodeId, directory: int) -> None:
        _disks(env).free_disk(node, directory)


def _start_again(env: FaultEnv, node: NodeId) -> None:
    """Start the node if Kafka halted it; restart it (gracefully) if it kept running on its other log directories,
    since a failed log directory stays offline until the broker restarts (KIP-112)."""
    if env.cluster.is_running(node):
        env.cluster.stop(node)
    env.cluster.start(node)


ERRNOS = {"EIO": errno.EIO, "ENOSPC": errno.ENOSPC, "EROFS": errno.EROFS, "EACCES": errno.EACCES,
          "ENXIO": errno.ENXIO}
"""The errors `disk_error` can inject, by name: a failing device (EIO, ENXIO), a full one (ENOSPC), a filesystem
remounted read-only after an error (EROFS), a permission change (EACCES)."""
_OPS = {"read": ("read",), "write": ("write",), "both": ("read", "write")}


def _errors(env: FaultEnv) -> DiskErrorControl:
    if not isinstance(env.cluster, DiskErrorControl):
        raise HarnessError(f"disk_error needs the process backend, with the log directories on the power-loss "
                           f"filesystem; this cluster ({type(env.cluster).__name__}) has none")
    return env.cluster


@dataclass(frozen=True, slots=True)
class DiskError(_DirectoryFault):
    """Fail I/O under the node's log directory; heal: stop, and start (or restart) the node."""

    _undoing = "stop failing"

    def _act(self, env: FaultEnv, node: NodeId, directory: int, fault: PlannedFault) -> None:
        params = fault.spec.params
        pattern = params.get("pattern")
        _errors(env).fail_disk_io(node, directory, ERRNOS[str(params.get("error", "EIO"))],
                                  _OPS[str(params.get("ops", "both"))], float(params.get("probability", 1.0)),
                                  None if pattern is None else str(pattern), fault.index)

    def _undo(self, env: FaultEnv, node: NodeId, directory: int) -> None:
        _errors(env).heal_disk_io(node, directory)


def _power(env: FaultEnv) -> PowerControl:
    if not isinstance(env.cluster, PowerControl):
        raise HarnessError(f"power_loss needs the process backend, with the log directories on the power-loss "
                           f"filesystem; this cluster ({type(env.cluster).__name__}) has none")
    return env.cluster


@dataclass(frozen=True, slots=True)
class PowerLoss:
    """SIGKILL the node, then lose its unsynced writes; heal: start it again."""

    spec: KindSpec
    _lost: dict[int, list[tuple[NodeId, UnsyncedLoss]]] = field(default_factory=dict, compare=False)

    def brings_nodes_back(self) -> bool:
        return True

    def apply(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> None:
        """Every node of the fault (`targets:`: a correlated power loss) dies before any loses its writes."""
        assert fault.target is not None
        power = _power(env)
        nodes: list[NodeId] = []
        for target in fault.spec.targets or (fault.target,):
            node = resolve_node(target, env.state, env.topology)
            if not isinstance(node, NodeId) or node.role == "zookeeper":
                raise HarnessError(f"{node}: power_loss cuts a broker's or KRaft controller's power")
            nodes.append(node)
        done.targets += [str(node) for node in nodes]
        done.nodes += nodes
        self._lost.setdefault(id(done), []).extend(zip(nodes, power.power_loss(*nodes), strict=True))

    def heal(self, env: FaultEnv, done: Applied) -> list[tuple[str, BaseException]]:
        self._lost.pop(id(done), None)
        return attempt([(f"start {node}", partial(env.cluster.start, node))
                        for node in done.nodes if isinstance(node, NodeId)])

    def describe(self, fault: PlannedFault, done: Applied) -> dict[str, Any]:
        lost = []
        for node, loss in self._lost.get(id(done), []):
            segments = sorted(((path, n) for path, n in loss.lost.items() if path.endswith(".log")),
                              key=lambda kv: (-kv[1], kv[0]))
            lost.append({**node_ref(node), "bytes": loss.lost_bytes, "log_bytes": sum(n for _, n in segments),
                         "files": len(loss.lost), "removed": len(loss.removed),
                         "segments": [[path, n] for path, n in segments[:5]]})
        return effect(nodes=done.nodes, down=True, lost=lost)


DISK_KINDS: tuple[DiskFull | DiskError | PowerLoss, ...] = (
    DiskFull(KindSpec(
        "disk_full", "Fill a broker's (or KRaft controller's) log directory: every later write there fails with "
        "ENOSPC. Kafka takes the directory offline (KIP-112): its replicas go offline and lead elsewhere, and a node "
        "whose only log directory failed halts. Needs cluster.log_dir_mb (a tmpfs per log directory).",
        frozenset({"broker", "controller"}),
        (ParamSpec("dir", "int", "which of the node's log directories (cluster.log_dirs) to fill: 0, the first, "
                   "holds a KRaft node's metadata log", default=0, minimum=0),),
        "required", "disk", "frees the space, and starts the node again (restarts it, gracefully, if it kept "
        "running on its other log directories: a failed directory comes back only with a restart)",
        MappingProxyType({"process": "a filler file takes the free space of the node's tmpfs log directory",
                          "containers": "not available: needs the process backend (cluster.log_dir_mb)"}))),
    DiskError(KindSpec(
        "disk_error", "Fail I/O under a broker's (or KRaft controller's) log directory with an errno (EIO by "
        "default): reads, writes or both, with a probability, optionally only for paths matching a glob (one "
        "partition's directory: 'orders-0/*'; the index files: '*.index'). Kafka takes the directory offline at the "
        "first error it meets (KIP-112), as at ENOSPC.",
        frozenset({"broker", "controller"}),
        (ParamSpec("error", "choice", "the errno the operations fail with", default="EIO", choices=tuple(ERRNOS)),
         ParamSpec("ops", "choice", "which operations fail: read, write (writes, truncates, fsyncs, creations) or "
                   "both", default="both", choices=tuple(_OPS)),
         ParamSpec("probability", "float", "the share of matching operations that fail, in (0, 1]", default=1.0),
         ParamSpec("pattern", "text", "a glob of the paths under the log directory that fail (default: all)"),
         ParamSpec("dir", "int", "which of the node's log directories (cluster.log_dirs) fails", default=0,
                   minimum=0)),
        "required", "disk", "stops the errors, and starts the node again (restarts it, gracefully, if it kept "
        "running on its other log directories: a failed directory comes back only with a restart)",
        MappingProxyType({"process": "the run's log directories are on a FUSE filesystem (harness.cluster.lazyfs) "
                                     "that fails matching operations with the errno while the fault lasts",
                          "containers": "not available: needs the process backend (a FUSE mount per log "
                                        "directory)"}))),
    PowerLoss(KindSpec(
        "power_loss", "Cut a broker's (or KRaft controller's) power: it dies at once (kill -9) and every write it "
        "made that was not fsynced is lost, as LazyFS does: unsynced file tails and overwrites are undone, and files "
        "created or renamed since their directory's last fsync are gone. Kafka does not fsync by default "
        "(flush.messages), so a loss of every replica at once (`targets: [broker:1, broker:2, broker:3]`: all die "
        "before any loses its writes) may lose acknowledged writes.",
        frozenset({"broker", "controller"}), (), "optional", "power",
        "starts the node again (Kafka recovers its logs, as after any crash)",
        MappingProxyType({"process": "the run's log directories are on a FUSE filesystem (harness.cluster.lazyfs) "
                                     "that tracks fsyncs; SIGKILL to the node, then its unsynced writes are undone",
                          "containers": "not available: needs the process backend (a FUSE mount per log "
                                        "directory)"}), several=True)),
)
"""The disk kinds, in `kafka-chaos faults` order."""
