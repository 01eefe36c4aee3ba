"""The process cluster's faults below the network on its nodes' own disks and clocks (`NodeDisks`, a part of
`ProcessCluster`): the log directories' mounts at bring-up (a tmpfs of `cluster.log_dir_mb`, the power-loss
filesystem with `ClusterSpec.lazy_fs`, or both: `harness.cluster.disks`), and what the fault kinds ask of them
through the protocols of `harness.cluster.base`: `DiskControl` (fill and free a tmpfs), `PowerControl` (a power
loss), `DiskErrorControl` (failing I/O) and `ClockControl` (a wall-clock step, `harness.cluster.clocks`)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from types import MappingProxyType

from harness.cluster import clocks, disks
from harness.cluster.base import ClusterSpec, NodeId, UnsyncedLoss
from harness.cluster.disks import LogDirMounts, backing_dir, kafka_log_dirs
from harness.cluster.lazyfs import LazyFs
from harness.errors import BackendError


class NodeDisks:
    """What `ProcessCluster` does to its nodes' log directories and clocks (it provides the attributes below)."""

    spec: ClusterSpec
    workdir: Path
    _mounts: LogDirMounts

    def _check(self, node: NodeId) -> None:
        raise NotImplementedError

    def kill(self, node: NodeId) -> None:
        raise NotImplementedError

    def _mount_log_dirs(self, nodes: Iterable[NodeId]) -> None:
        """Before the nodes start: each Kafka node's log directories on their tmpfs and/or power-loss filesystem."""
        for node in nodes if self.spec.log_dir_mb or self.spec.lazy_fs else ():
            for data in kafka_log_dirs(self.workdir, node, self.spec.log_dirs) if node.role != "zookeeper" else ():
                if self.spec.log_dir_mb:
                    self._mounts.mount(backing_dir(data) if self.spec.lazy_fs else data, self.spec.log_dir_mb)
                if self.spec.lazy_fs:
                    self._mounts.mount_lazy(data, backing_dir(data))

    def skew_clock(self, node: NodeId, offset_s: int) -> None:
        """Step the node's wall clock `offset_s` seconds from the real one (0: back to it); needs `fake_clocks`."""
        self._check(node)
        if node.role == "zookeeper" or not self.spec.fake_clocks:
            raise BackendError(f"{node}: not on a fake clock (only brokers and KRaft controllers of a run with a "
                               f"clock_skew fault are)")
        clocks.set_offset(kafka_log_dirs(self.workdir, node)[0].parent, offset_s)

    def power_loss(self, *nodes: NodeId) -> tuple[UnsyncedLoss, ...]:
        """SIGKILL the nodes, all of them first (a correlated power loss: none replicates from another after its
        loss), then undo every write each made to its log directories that was not fsynced; one loss per node."""
        dirs = [self._lazy_dirs(node, "power_loss") for node in nodes]
        for node in nodes:
            self.kill(node)
        out: list[UnsyncedLoss] = []
        for node_dirs in dirs:
            lost: dict[str, int] = {}
            removed: list[str] = []
            for data, fs in node_dirs:
                report = fs.crash()
                lost.update({f"{data.name}/{path}": n for path, n in report.lost.items()})
                removed += [f"{data.name}/{path}" for path in report.removed]
            out.append(UnsyncedLoss(MappingProxyType(lost), tuple(removed)))
        return tuple(out)

    def fail_disk_io(self, node: NodeId, directory: int, error: int, ops: tuple[str, ...], probability: float,
                     pattern: str | None, seed: int) -> None:
        """Make `ops` ("read", "write") under one of the node's log directories fail with `error`, with
        `probability`, for paths matching `pattern` (a glob under the directory; None: all), until `heal_disk_io`."""
        self._lazy_dir(node, directory, "disk_error").fail(error, ops, probability, pattern, seed)

    def heal_disk_io(self, node: NodeId, directory: int) -> int:
        """Stop failing I/O there; how many operations failed."""
        return self._lazy_dir(node, directory, "disk_error").clear()

    def fill_disk(self, node: NodeId, directory: int = 0) -> int:
        """Fill one of the node's log directories (a tmpfs of `cluster.log_dir_mb`): every later write there fails
        with ENOSPC. The bytes taken."""
        return disks.fill(self._disk(node, directory))

    def free_disk(self, node: NodeId, directory: int = 0) -> None:
        """Give back what `fill_disk` took."""
        disks.free(self._disk(node, directory))

    def _disk(self, node: NodeId, directory: int) -> Path:
        self._check(node)
        if node.role == "zookeeper" or not self.spec.log_dir_mb:
            raise BackendError(f"{node}: no size-limited log directory to fill (cluster.log_dir_mb is "
                               f"{self.spec.log_dir_mb}, and only brokers and KRaft controllers have one)")
        data = self._dir(node, directory)
        return backing_dir(data) if self.spec.lazy_fs else data  # the tmpfs, beneath the FUSE mount

    def _dir(self, node: NodeId, directory: int) -> Path:
        dirs = kafka_log_dirs(self.workdir, node, self.spec.log_dirs)
        if not 0 <= directory < len(dirs):
            raise BackendError(f"{node}: no log directory {directory} (it has {len(dirs)}: cluster.log_dirs)")
        return dirs[directory]

    def _lazy_dirs(self, node: NodeId, fault: str) -> list[tuple[Path, LazyFs]]:
        self._on_lazy_fs(node, fault)
        return [(data, self._mounts.lazy(data)) for data in kafka_log_dirs(self.workdir, node, self.spec.log_dirs)]

    def _lazy_dir(self, node: NodeId, directory: int, fault: str) -> LazyFs:
        self._on_lazy_fs(node, fault)
        return self._mounts.lazy(self._dir(node, directory))

    def _on_lazy_fs(self, node: NodeId, fault: str) -> None:
        self._check(node)
        if node.role == "zookeeper" or not self.spec.lazy_fs:
            raise BackendError(f"{node}: its log directories are not on the power-loss filesystem (only brokers' and "
                               f"KRaft controllers' are, in a run with a {fault} fault)")
