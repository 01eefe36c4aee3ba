"""The experiment schema: frozen, typed specs built by the loader right after reading YAML.

Durations are seconds (float). Kafka properties keep Kafka's names and are strings. Nothing
here reads files; `harness.experiment.loader` builds these and validates them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from harness.cluster.base import ClusterSpec
from harness.experiment.check_ids import CHECK_IDS
from harness.faults.targets import LinkTarget, Target

Acks = Literal["0", "1", "all"]
Strategy = Literal["range", "roundrobin", "cooperative-sticky"]
CommitMode = Literal["auto", "sync", "async"]
Isolation = Literal["read_committed", "read_uncommitted"]
ParamValue = int | float | bool | str


def frozen_map(data: Mapping[str, object] | None = None) -> Mapping[str, object]:
    return MappingProxyType(dict(data or {}))


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int = 1
    replication_factor: int = 1
    config: Mapping[str, str] = field(default_factory=frozen_map)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class TransactionSpec:
    """A transactional producer (`transactions:` of a producer): librdkafka's `transactional.id`, the records
    each transaction holds (spread over the topic's partitions in turn), the share of transactions it aborts on
    purpose (drawn from the seed) and `transaction.timeout.ms`."""

    id: str
    records: int = 10
    abort_rate: float = 0.0
    timeout: float = 60.0


@dataclass(frozen=True, slots=True)
class ProducerSpec:
    id: str
    topic: str
    rate: float = 100.0
    acks: Acks = "all"
    idempotence: bool = True
    keys: int = 0
    config: Mapping[str, str] = field(default_factory=frozen_map)  # type: ignore[arg-type]
    transactions: TransactionSpec | None = None


@dataclass(frozen=True, slots=True)
class ConsumerSpec:
    group: str
    topics: tuple[str, ...]
    members: int = 1
    strategy: Strategy = "range"
    commit: CommitMode = "auto"
    config: Mapping[str, str] = field(default_factory=frozen_map)  # type: ignore[arg-type]
    isolation: Isolation = "read_committed"
    """librdkafka's `isolation.level` (its default: read_committed)."""


@dataclass(frozen=True, slots=True)
class PipelineSpec:
    """A read-process-write stage (`workload.pipelines`): consumes `input` as `group` (read_committed) and writes
    one record per input record to `output`, committing the consumed offsets in the same transaction."""

    id: str
    input: str
    output: str
    group: str
    transactions: TransactionSpec


CLIENTS = ("librdkafka", "java")
"""`workload.client`: librdkafka (confluent-kafka, in the harness's process) or the Java client (kafka-clients, one
worker process per producer and per consumer-group member)."""


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    producers: tuple[ProducerSpec, ...] = ()
    consumers: tuple[ConsumerSpec, ...] = ()
    pipelines: tuple[PipelineSpec, ...] = ()
    client: str = "librdkafka"
    client_version: str | None = None
    """The Java client's kafka-clients release; None: the broker's release. Always None for librdkafka (the
    installed confluent-kafka)."""

    def java_release(self, broker_version: str) -> str:
        """The kafka-clients release the Java client runs: the experiment's, else the broker's."""
        return self.client_version or broker_version


@dataclass(frozen=True, slots=True)
class FaultSpec:
    """One scheduled fault as written. Exactly one of target / link / groups is set, per its kind."""

    index: int
    at: float
    kind: str
    target: Target | None = None
    link: LinkTarget | None = None
    groups: tuple[tuple[Target, ...], ...] = ()
    params: Mapping[str, ParamValue] = field(default_factory=frozen_map)  # type: ignore[arg-type]
    duration: float | None = None
    jitter: float = 0.0
    targets: tuple[Target, ...] = ()
    """Every node of a fault written with `targets:` (a kind with `KindSpec.several`), acting at one instant;
    `target` is the first of them. Empty for a fault written with `target:`."""
    during: str | None = None
    """A step of the run's `migrate_to_kraft` (`MIGRATION_STEPS`): `at` counts from when that step began, not from
    the chaos phase's start (a migration's pace follows the machine's load). None: from the chaos phase's start."""

    @property
    def nodes(self) -> tuple[Target, ...]:
        """The node targets the fault acts on: `targets`, else `target` alone (none for a link or groups)."""
        return self.targets or ((self.target,) if self.target is not None else ())

    def describe(self) -> str:
        what = ",".join(map(str, self.targets)) or self.target or self.link or " | ".join(
            ",".join(map(str, g)) for g in self.groups)
        return f"#{self.index} {self.kind} {what}"


ROLLING_ACTIONS = ("rolling_restart", "upgrade", "finalize_upgrade")
MIGRATION_STEPS = ("controllers", "brokers", "copy", "brokers_kraft", "controllers_kraft")
"""migrate_to_kraft's steps in Kafka's order (`harness.faults.catalog`)."""
"""The operations that restart brokers one at a time, each stop a `stop` fault `<op>.<k>`."""


@dataclass(frozen=True, slots=True)
class OperationSpec:
    """One scheduled operation as written (`action:`; `harness.faults.catalog.OPERATIONS`). `index` is its
    place in the schedule list, numbered with the faults."""

    index: int
    at: float
    action: str
    topic: str | None = None
    """None (elect_preferred only): every topic."""
    partitions: tuple[int, ...] = ()
    """Empty: every partition of the topic."""
    replicas: tuple[tuple[int, tuple[int, ...]], ...] = ()
    """reassign: (partition, new replica list) pairs, in partition order; empty with `shuffle`."""
    shuffle: bool = False
    timeout: float = 60.0
    count: int | None = None
    """add_partitions: the topic's partition count afterwards."""
    group: str | None = None
    """scale_consumers: the consumer group (declared under `workload.consumers`)."""
    members: int | None = None
    """scale_consumers: the group's live member count afterwards."""
    abrupt: bool = False
    """scale_consumers: leaving members end as SIGKILL would (no LeaveGroup), not cleanly. restart_producer: the
    old client purges what it holds instead of delivering it."""
    brokers: tuple[int, ...] = ()
    """rolling_restart, upgrade, finalize_upgrade: the brokers in restart order (empty: every broker in id order)."""
    producer: str | None = None
    """restart_producer: the producer's id."""
    zombie: bool = False
    """restart_producer of a transactional producer: the old client stays alive with a transaction open, and once
    the new client has fenced it, writes on and tries to commit (it must be fenced, and none of it seen)."""
    to: str | None = None
    """upgrade: the Apache Kafka release the brokers roll onto (`3.9.2`)."""
    steps: tuple[str, ...] = ()
    """migrate_to_kraft: the steps it runs, a prefix of `MIGRATION_STEPS` (empty: all of them)."""

    @property
    def rolls(self) -> bool:
        """Whether it restarts brokers one at a time (rolling_restart, upgrade, finalize_upgrade)."""
        return self.action in ROLLING_ACTIONS

    def describe(self) -> str:
        if self.producer is not None:
            how = " (abrupt)" if self.abrupt else " (zombie)" if self.zombie else ""
            return f"#{self.index} {self.action} {self.producer}{how}"
        if self.action == "migrate_to_kraft":
            return f"#{self.index} {self.action} " + " -> ".join(self.steps or MIGRATION_STEPS)
        if self.rolls:
            return f"#{self.index} {self.action} " + (
                "brokers " + ", ".join(map(str, self.brokers)) if self.brokers else "every broker") + (
                f" -> {self.to}" if self.to is not None else "")
        if self.group is not None:
            how = " (abrupt)" if self.abrupt else ""
            return f"#{self.index} {self.action} {self.group} -> {self.members} members{how}"
        what = self.topic or "every topic"
        if self.count is not None:
            return f"#{self.index} {self.action} {what} -> {self.count} partitions"
        if self.partitions:
            what += "/" + ",".join(map(str, self.partitions))
        if self.replicas:
            what += " -> " + " ".join(f"{p}:{list(r)}" for p, r in self.replicas)
        elif self.shuffle:
            what += " (shuffled)"
        return f"#{self.index} {self.action} {what}"


@dataclass(frozen=True, slots=True)
class SloSpec:
    controller_failover: float = 30.0
    partition_unavailable: float = 40.0
    rebalance: float = 60.0
    write_unavailable: float | None = None
    """Longest time producers may go without an acknowledged write to a partition; None: not declared."""
    read_unavailable: float | None = None
    """Longest time a group may receive nothing from a partition while records wait; None: not declared."""

    def declared_optional(self) -> dict[str, float]:
        """The optional SLOs that are declared, by key (an undeclared one is left out: reported, never judged)."""
        return {k: v for k, v in (("write_unavailable", self.write_unavailable),
                                  ("read_unavailable", self.read_unavailable)) if v is not None}


@dataclass(frozen=True, slots=True)
class ExpectSpec:
    """The checks this variant is known to fail (`expect:`, `harness.experiment.expect_spec`), and why."""

    fail: tuple[str, ...] = ()
    why: str = ""


@dataclass(frozen=True, slots=True)
class ExploreSpec:
    """How `kafka-chaos explore` narrows its fault space for this file (`explore:`,
    `harness.experiment.explore_spec`); `run` ignores it."""

    faults: tuple[str, ...] = ()
    """Fault kinds to draw from; empty: every one the cluster's mode has (`harness.faults.generator`)."""
    per_schedule: tuple[int, int] = (2, 4)
    """How many faults a drawn schedule holds (inclusive)."""
    durations: tuple[float, float] = (4.0, 16.0)
    """Each drawn fault's duration, shortest and longest."""
    window: tuple[float, float] | None = None
    """When drawn faults start, seconds into the chaos phase; None: from 3 s to 16 s before its end."""
    overlap: float = 0.5
    """The chance that a drawn fault starts while the one before it is in effect, in that fault's second half (once
    its effect, an expired session or a shrunk ISR, has had time to show), instead of anywhere in the window."""
    targets: tuple[str, ...] = ()
    """Jepsen's target choices to draw among (`harness.faults.generator.TARGETS`); empty: every one."""
    rates: tuple[tuple[str, float], ...] = ()
    """How often a kind is drawn, relative to the others (kind, weight); a kind not named weighs 1."""
    concurrent: int | None = None
    """The most drawn faults in effect at once; None: no limit."""


@dataclass(frozen=True, slots=True)
class VerifySpec:
    checks: tuple[str, ...] = ("all",)
    allow: tuple[str, ...] = ()
    slo: SloSpec = SloSpec()
    expect: ExpectSpec = ExpectSpec()
    """From the experiment's top-level `expect:` block, resolved for this variant."""


@dataclass(frozen=True, slots=True)
class Experiment:
    name: str
    duration: float
    description: str = ""
    seed: int = 1
    cluster: ClusterSpec = field(default_factory=ClusterSpec)
    """The cluster's shape (`harness.experiment.cluster_fields`); the run adds its cluster id and needs."""
    topics: tuple[TopicSpec, ...] = ()
    workload: WorkloadSpec = WorkloadSpec()
    steady_state: tuple[str, ...] = ("controller_present", "all_partitions_led")
    steady_timeout: float = 60.0
    schedule: tuple[FaultSpec, ...] = ()
    operations: tuple[OperationSpec, ...] = ()
    """The schedule's `action:` entries (their indices interleave with the faults')."""
    drain: float = 10.0
    verify: VerifySpec = VerifySpec()
    explore: ExploreSpec = ExploreSpec()
    source: str = "<memory>"
    variant: str = ""
    """The `matrix:` variant this spec is (`acks=1,kafka=7.6.1`); empty without a matrix."""

    @property
    def label(self) -> str:
        """`name` or `name[variant]`: how reports and test ids name this spec."""
        return f"{self.name}[{self.variant}]" if self.variant else self.name

    def topic(self, name: str) -> TopicSpec | None:
        return next((t for t in self.topics if t.name == name), None)

    def group(self, name: str) -> ConsumerSpec | None:
        return next((c for c in self.workload.consumers if c.group == name), None)



def default_steady_state(workload: object) -> list[str]:
    """The probes a run waits for before chaos when the experiment names none: a live controller and a live
    leader for every declared partition, and, when the workload has consumer groups, every group Stable. A
    fault that lands while a group still forms its first generation makes its start-up the rebalance that
    `slo.rebalance` measures: in CI a start-up rebalance of experiments/reassignment.yaml, its coordinator
    then cut off and killed by the schedule, took 32 s."""
    steady = ["controller_present", "all_partitions_led"]
    if isinstance(workload, WorkloadSpec) and workload.consumers:
        steady.append("group_stable")
    return steady


CHECK_FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(c.split(".")[0] for c in CHECK_IDS))
