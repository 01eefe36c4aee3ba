"""One fault of an experiment text injected and healed by the real `FaultInjector` on a cluster double (3 brokers,
1 ZooKeeper member): the events it records."""

from __future__ import annotations

from typing import Any

from harness.cluster.links import LinkGraph
from harness.experiment import load_experiment_text
from harness.faults.inject import FaultInjector
from harness.faults.schedule import plan
from harness.history.jsonl import record_of
from harness.history.state import ClusterState


def inject_and_heal(text: str, cluster: object, source: str = "mem.yaml") -> list[dict[str, Any]]:
    (fault,) = plan(load_experiment_text(text, source))
    events: list[dict[str, Any]] = []
    injector = FaultInjector(cluster, ClusterState(), LinkGraph((1, 2, 3), (1,)),  # type: ignore[arg-type]
                             lambda e: events.append(record_of(e)))
    assert injector.inject(fault)
    injector.heal(fault)
    return events
