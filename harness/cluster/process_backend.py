"""The process backend's entry point: `ProcessBackend` brings up `process.ProcessCluster`s (local processes of
Apache Kafka, ZooKeeper and Toxiproxy; docs/design.md "Backends"), after killing what harnesses that died without
teardown left running."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from harness.cluster.base import (
    ClockControl,
    Cluster,
    ClusterBackend,
    ClusterSpec,
    DiskControl,
    DiskErrorControl,
    Link,
    PacketControl,
    PowerControl,
)
from harness.cluster.leftovers import CleanedLeftover, clean_leftovers
from harness.cluster.lifecycle import start_or_teardown
from harness.cluster.process import ProcessCluster
from harness.cluster.process_flavour import find_java, planned_broker, select_launcher, switched_launcher
from harness.cluster.process_toxiproxy import ProcessLink
from harness.cluster.zookeeper import zookeeper_classpath
from harness.errors import BackendError, ConfigError, HarnessError

__all__ = ["ProcessBackend", "ProcessCluster"]


class ProcessBackend:
    """Brings up `ProcessCluster`s. Reads `KAFKA_HOME`, `KAFKA_CHAOS_CACHE`, `TOXIPROXY_BIN`, `ZOOKEEPER_HOME`,
    `JAVA_HOME`, `KAFKA_HEAP_OPTS`, `KAFKA_JVM_PERFORMANCE_OPTS`."""

    name = "process"

    def __init__(
        self, environ: Mapping[str, str] | None = None, *, stop_timeout_s: float = 30.0,
        zookeeper_tick_ms: int = 500, leftovers_dir: Path | None = None,
        progress: Callable[[str], None] | None = None, broker: str | None = None,
    ) -> None:
        self.environ = dict(os.environ if environ is None else environ)
        self.stop_timeout_s = stop_timeout_s
        self.zookeeper_tick_ms = zookeeper_tick_ms
        self.leftovers_dir = leftovers_dir
        self.progress = progress
        """Where an Apache Kafka install reports its steps (None: quietly)."""
        self.broker = broker
        """When set, the `cluster.broker` of every cluster, whatever its spec says."""

    def available(self) -> tuple[bool, str]:
        """(True, which broker flavour) when java, ZooKeeper and a usable broker flavour are here."""
        java = find_java(self.environ)
        if java is None:
            return False, "no `java` on PATH or in JAVA_HOME (ZooKeeper needs a JRE 11+)"
        try:
            zookeeper_classpath()
            return True, planned_broker(self.environ)
        except HarnessError as exc:
            return False, str(exc)

    def up(self, spec: ClusterSpec, workdir: Path) -> ProcessCluster:
        """Start ZooKeeper, Toxiproxy with every link's proxy, then the brokers; wait until all are ready.

        First kills what harnesses that died without teardown left running (`clean_leftovers`; the
        cluster's `cleaned_leftovers` and `describe()` list them).

        `spec.brokers == 0` brings up ZooKeeper and Toxiproxy only (used by tests of ZooKeeper faults).
        """
        if spec.migrating and spec.security.enabled:
            raise ConfigError("process backend: the ZooKeeper-to-KRaft migration's cluster runs without "
                              "cluster.security for now (its controllers' client settings are not rendered)")
        if spec.brokers < 0 or (spec.zookeepers not in (1, 3, 5) if not spec.kraft
                                else spec.controllers not in (1, 3, 5)) or (
                spec.migrating and spec.controllers not in (1, 3, 5)):
            raise ConfigError(f"process backend: brokers must be >= 0 and zookeepers (KRaft: controllers) 1, 3 "
                              f"or 5; got brokers={spec.brokers}, zookeepers={spec.zookeepers}, "
                              f"controllers={spec.controllers}")
        java = find_java(self.environ)
        if java is None:
            raise BackendError("process backend: no `java` on PATH or in JAVA_HOME")
        launcher = select_launcher(self.environ, broker=self.broker or spec.broker, kafka=spec.kafka_version,
                                   java=java, progress=self.progress,
                                   mode=spec.mode)
        releases = {release: switched_launcher(launcher, release, self.environ, self.progress)
                    for release in spec.releases}  # the upgrades' releases, installed before anything runs
        cleaned = self.clean_leftovers(self.leftovers_dir)  # groups of harnesses that died without teardown
        cluster = ProcessCluster(spec, Path(workdir), launcher=launcher, java=java, backend=self, releases=releases)
        cluster.cleaned_leftovers = tuple(cleaned)
        return start_or_teardown(cluster)

    @staticmethod
    def clean_leftovers(directory: Path | None = None) -> list[CleanedLeftover]:
        """Kill process groups left by a harness that died without teardown (see `leftovers`)."""
        return clean_leftovers(directory)


if TYPE_CHECKING:  # mypy checks that the classes implement the protocols of harness.cluster.base
    def _implements(backend: ProcessBackend, cluster: ProcessCluster, link: ProcessLink) -> None:
        _b: ClusterBackend = backend
        _c: Cluster = cluster
        _d: DiskControl = cluster
        _p: PacketControl = cluster
        _t: ClockControl = cluster
        _w: PowerControl = cluster
        _e: DiskErrorControl = cluster
        _l: Link = link
