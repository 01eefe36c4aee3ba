"""A cluster kept up across several experiments (what the `chaos_cluster` fixture lends).

`SharedCluster` brings one cluster up and down; `LendingBackend` is a `ClusterBackend` whose `up`
hands out that cluster for one run, provided the run asks for the same topology, and whose loan's
`down` leaves it running (the runner has healed every fault by then). Experiments that share a
cluster should use their own topic and group names: topics and committed offsets persist.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from harness.cluster.base import RUN_FIELDS, Cluster, ClusterBackend, ClusterSpec, client_access
from harness.cluster.client_security import ClientUser
from harness.errors import BackendError


def _shape(spec: ClusterSpec) -> dict[str, object]:
    """The cluster's shape: every spec field but those a run sets (its cluster id and needs)."""
    return {f.name: dict(v) if isinstance(v := getattr(spec, f.name), Mapping) else v
            for f in dataclasses.fields(spec) if f.name not in RUN_FIELDS}


class SharedCluster:
    """One cluster for many runs: a context manager around `backend.up(spec)` / `down()`."""

    def __init__(self, backend: ClusterBackend, reason: str, spec: ClusterSpec, workdir: Path) -> None:
        self.backend, self.reason, self.spec, self.workdir = backend, reason, spec, workdir
        self.cluster: Cluster | None = None
        self.runs = 0

    def __enter__(self) -> SharedCluster:
        self.cluster = self.backend.up(self.spec, self.workdir)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        cluster, self.cluster = self.cluster, None
        if cluster is not None:
            cluster.down()

    @property
    def bootstrap_servers(self) -> str:
        return self._live().bootstrap_servers

    def client_config(self, user: ClientUser = "client") -> dict[str, str]:
        """A librdkafka client's settings for this cluster: its bootstrap address, and on a secured cluster
        (`chaos_cluster(security={...})`) the protocol, CA and SASL user (`client`: the workloads', `admin`)."""
        cluster = self._live()
        return {"bootstrap.servers": cluster.bootstrap_servers, **client_access(cluster, user).librdkafka()}

    def _live(self) -> Cluster:
        if self.cluster is None:
            raise BackendError("the shared cluster is not up (used outside its `with` block?)")
        return self.cluster

    def lending(self) -> tuple[ClusterBackend, str]:
        """A backend that lends this cluster to one run at a time, and the reason run.json records."""
        return LendingBackend(self), f"{self.reason}; cluster shared across experiments (chaos_cluster)"


class LendingBackend:
    """A `ClusterBackend` that lends the shared cluster instead of starting one."""

    def __init__(self, shared: SharedCluster) -> None:
        self.shared = shared
        self.name = shared.backend.name

    def available(self) -> tuple[bool, str]:
        return self.shared.cluster is not None, "lends the cluster of chaos_cluster"

    def up(self, spec: ClusterSpec, workdir: Path) -> Cluster:
        want, have = _shape(spec), _shape(self.shared.spec)
        diff = {k: (want[k], have[k]) for k in want if want[k] != have[k]}
        if diff:
            shown = "; ".join(f"{k}: experiment wants {w!r}, shared cluster has {h!r}" for k, (w, h) in diff.items())
            raise BackendError(f"this experiment cannot run on the shared chaos_cluster: {shown}")
        self.shared.runs += 1
        return _Loan(self.shared._live())


class _Loan:
    """The shared cluster for one run: everything delegates, but `down` and `__exit__` keep it up."""

    def __init__(self, cluster: Cluster) -> None:
        self._cluster = cluster

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cluster, name)

    def down(self) -> None:
        """Nothing to do: the cluster outlives the run (faults were healed in the heal phase)."""

    def __enter__(self) -> _Loan:
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()
