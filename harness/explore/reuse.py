"""One cluster for many explored schedules (issue 40, item 2).

`ReusedCluster` brings a cluster up on first use (the `chaos_cluster` machinery: `harness.testing.shared`) and lends
it to each schedule's run. After a run it deletes what the run made (its topics and consumer groups, through the
Admin API, waiting until the topics are gone from Metadata), so the next schedule starts on an empty cluster: the
run itself healed every fault in its heal phase, and the next run's steady-state probes check the cluster is healthy.
A run that did not complete, or a clean-up that fails, retires the cluster: the next schedule gets a fresh one, and
the reason is kept (`fresh`) for the explore report. `close` takes the cluster down. A schedule whose run could not
reach its steady state on a reused cluster is the cluster's fault, not the schedule's: `EngineRunner` runs it again
on a fresh cluster.
"""

from __future__ import annotations

import time
from pathlib import Path
from types import TracebackType
from typing import Any, cast

from harness.cluster.base import ClusterBackend, ClusterSpec, client_access
from harness.cluster.client_security import PLAINTEXT, ClientSecurity
from harness.experiment.schema import Experiment
from harness.testing.shared import SharedCluster
from harness.workload.common import LIBRDKAFKA_LOGGER

CLEAN_TIMEOUT_S = 60.0
"""How long the clean-up waits for deleted topics to leave Metadata."""


class ReusedCluster:
    """A cluster of `spec` on `backend`, lent to one run at a time, cleaned between runs, replaced when unhealthy."""

    def __init__(self, backend: ClusterBackend, reason: str, spec: ClusterSpec, workdir: Path) -> None:
        self.backend, self.reason, self.spec, self.workdir = backend, reason, spec, workdir
        self._shared: SharedCluster | None = None
        self.clusters = 0
        """Clusters brought up so far."""
        self.fresh: list[str] = []
        """Why each cluster after the first was needed."""

    def lend(self) -> tuple[ClusterBackend, str]:
        """A backend that lends the current cluster (brought up first when there is none)."""
        if self._shared is None:
            shared = SharedCluster(self.backend, self.reason, self.spec, self.workdir / f"cluster-{self.clusters}")
            self._shared = shared.__enter__()
            self.clusters += 1
        backend, reason = self._shared.lending()
        return backend, reason.replace("chaos_cluster", "kafka-chaos explore")

    @property
    def runs(self) -> int:
        """Runs the current cluster has served."""
        return self._shared.runs if self._shared is not None else 0

    def after(self, exp: Experiment, status: str) -> None:
        """After a run of `exp` that ended `status`: clean the cluster for the next one, or retire it."""
        if self._shared is None:
            return
        if status != "completed":
            self.retire(f"the run before ended {status}")
            return
        try:
            clean(self._shared.bootstrap_servers, exp, security=client_access(self._shared.cluster, "admin"))
        except Exception as exc:  # anything left behind would be read by the next run: a fresh cluster instead
            self.retire(f"cleaning up after a run failed: {type(exc).__name__}: {exc}")

    def retire(self, why: str) -> None:
        """Take the current cluster down; the next `lend` brings a fresh one up (and `fresh` says why)."""
        if self._shared is not None:
            self.fresh.append(why)
        self.close()

    def close(self) -> None:
        shared, self._shared = self._shared, None
        if shared is not None:
            shared.__exit__(None, None, None)

    def __enter__(self) -> ReusedCluster:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def clean(bootstrap_servers: str, exp: Experiment, timeout_s: float = CLEAN_TIMEOUT_S,
          security: ClientSecurity = PLAINTEXT) -> None:
    """Delete `exp`'s topics (its declared ones and its pipelines' outputs) and consumer groups, and wait until the
    topics are gone from Metadata. Raises on an error Kafka answers or on the timeout."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(cast(dict[str, Any], {"bootstrap.servers": bootstrap_servers, "logger": LIBRDKAFKA_LOGGER,
                                              **security.librdkafka()}))
    topics = sorted({t.name for t in exp.topics} | {p.output for p in exp.workload.pipelines})
    groups = sorted({c.group for c in exp.workload.consumers} | {p.group for p in exp.workload.pipelines})
    existing = set(admin.list_topics(timeout=10).topics)
    doomed = [t for t in topics if t in existing]
    for future in admin.delete_topics(doomed, operation_timeout=30).values() if doomed else ():
        future.result()
    if groups:
        for future in admin.delete_consumer_groups(groups, request_timeout=30).values():
            try:
                future.result()
            except Exception as exc:  # a group that never committed has nothing to delete
                if "GROUP_ID_NOT_FOUND" not in str(exc):
                    raise
    deadline = time.monotonic() + timeout_s
    while True:
        left = set(doomed) & set(admin.list_topics(timeout=10).topics)
        if not left:
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"awaited the deletion of {sorted(left)} for {timeout_s:g}s; they are still listed")
        time.sleep(0.5)
