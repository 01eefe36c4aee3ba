"""Recording fakes for unit tests of the engine's orchestration (phases, fault mapping, teardown).

They stand in for a cluster, observers and workloads so that the runner's own logic can be tested
without processes; they say nothing about Kafka. Real-cluster runs are in tests/integration."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from harness.cluster.base import BrokerFlavour, ClusterSpec, LinkSource, NodeId, link_name
from harness.experiment.schema import Experiment
from harness.history.events import BrokerUp, Controller, GroupState, PartitionState
from harness.history.jsonl import EventSink


class FakeLink:
    def __init__(self, name: str, calls: list[str]) -> None:
        self.name = name
        self.calls = calls

    def disable(self) -> None:
        self.calls.append(f"disable {self.name}")

    def enable(self) -> None:
        self.calls.append(f"enable {self.name}")

    def add_toxic(self, kind: str, attributes: Mapping[str, float | int], *, stream: str = "downstream",
                  toxicity: float = 1.0, name: str | None = None) -> str:
        self.calls.append(f"toxic {self.name} {kind} {dict(attributes)} {stream}")
        return name or kind

    def remove_toxic(self, name: str) -> None:
        self.calls.append(f"untoxic {self.name} {name}")


class FakeCluster:
    """Records node and link operations; `fail_on` makes one operation raise."""

    bootstrap_servers = "fake:9092"
    zookeeper_connect = "fake:2181"
    quorum_voters: dict[int, str] = {}
    broker_addresses: dict[int, str] = {}

    def __init__(self, spec: ClusterSpec, fail_on: str | None = None) -> None:
        self.nodes = tuple(NodeId.broker(i) for i in range(1, spec.brokers + 1))
        self.flavour = BrokerFlavour("apache-kafka", "test")
        self.calls: list[str] = []
        self.fail_on = fail_on

    def _op(self, what: str, node: NodeId) -> None:
        self.calls.append(f"{what} {node}")
        if self.fail_on == what:
            from harness.errors import BackendError

            raise BackendError(f"{what} {node} failed on purpose")

    def kill(self, node: NodeId) -> None:
        self._op("kill", node)

    def stop(self, node: NodeId) -> None:
        self._op("stop", node)

    def start(self, node: NodeId) -> None:
        self._op("start", node)

    def pause(self, node: NodeId) -> None:
        self._op("pause", node)

    def resume(self, node: NodeId) -> None:
        self._op("resume", node)

    def is_running(self, node: NodeId) -> bool:
        return True

    def link(self, src: LinkSource, dst: NodeId) -> FakeLink:
        return FakeLink(link_name(src, dst), self.calls)

    def describe(self) -> Mapping[str, object]:
        return {"fake": True}

    def down(self) -> None:
        self.calls.append("down")

    def __enter__(self) -> FakeCluster:
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.down()


class FakeBackend:
    name = "fake"

    def __init__(self, fail_on: str | None = None) -> None:
        self.cluster: FakeCluster | None = None
        self.fail_on = fail_on

    def available(self) -> tuple[bool, str]:
        return True, "fake backend for engine unit tests"

    def up(self, spec: ClusterSpec, workdir: Path) -> FakeCluster:
        self.cluster = FakeCluster(spec, self.fail_on)
        return self.cluster


class FakeObserver:
    """Emits a healthy cluster's state once: controller 1, all brokers up, every partition led by 1."""

    name = "fake-observer"

    def __init__(self, exp: Experiment, sink: EventSink) -> None:
        self.exp, self.sink, self.stopped = exp, sink, False

    def start(self) -> None:
        self.sink(Controller(src="zk", broker=1, epoch=1))
        for b in range(1, self.exp.cluster.brokers + 1):
            self.sink(BrokerUp(src="zk", broker=b))
        for t in self.exp.topics:
            replicas = tuple(range(1, t.replication_factor + 1))
            for p in range(t.partitions):
                self.sink(PartitionState(src="zk", topic=t.name, partition=p, leader=1, leader_epoch=0, isr=replicas,
                                         replicas=replicas, controller_epoch=1))
        for c in self.exp.workload.consumers:
            self.sink(GroupState(src="admin", group=c.group, state="Stable", generation=1, coordinator=2, leader=None,
                                 protocol="range", members=(), group_type=None))

    def stop(self) -> None:
        self.stopped = True


class FakeWorkload:
    def __init__(self, name: str, log: list[str], group: str | None = None) -> None:
        self.name = name
        self.group = group or name
        self.producer_id = name.removeprefix("producer:")
        self.log = log

    def start(self) -> None:
        self.log.append(f"start {self.name}")

    def stop(self) -> None:
        self.log.append(f"stop {self.name}")

    def drain(self, timeout_s: float) -> None:
        self.log.append(f"drain {self.name}")

    def close(self) -> None:
        self.log.append(f"close {self.name}")

    def kill_member(self, n: int) -> None:
        self.log.append(f"kill_member {self.name}/{n}")

    def pause_member(self, n: int) -> None:
        self.log.append(f"pause_member {self.name}/{n}")

    def resume_member(self, n: int) -> None:
        self.log.append(f"resume_member {self.name}/{n}")

    def restart_member(self, n: int) -> None:
        self.log.append(f"restart_member {self.name}/{n}")

    def pause(self) -> None:
        self.log.append(f"pause {self.name}")

    def resume(self) -> None:
        self.log.append(f"resume {self.name}")


def fake_parts(log: list[str]) -> Any:
    from harness.engine.parts import RunParts

    return RunParts(
        observers=lambda exp, cluster, sink: [FakeObserver(exp, sink)],
        producers=lambda exp, cluster, sink: [FakeWorkload(f"producer:{p.id}", log) for p in exp.workload.producers],
        consumers=lambda exp, cluster, sink: [FakeWorkload(f"group:{c.group}", log, c.group)
                                              for c in exp.workload.consumers],
        create_topics=lambda exp, cluster: log.append("create_topics"),
    )
