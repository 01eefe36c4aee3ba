"""The catalogue of schedule actions: the single register of fault kinds (each kind's module holds its parameters,
valid targets, duration rule, overlap class, what each backend does, and its behaviour: apply, heal and the effect
it records) and of
operations (what an operator does to a healthy cluster: reassignment, preferred election, new partitions,
consumer scaling, producer restarts, rolling restarts; their keys and how each broker kind carries them out).

Validation of experiment files, `kafka-chaos faults` / `kafka-chaos actions`, the schedule and every backend
read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from harness.faults.clock_faults import CLOCK_KINDS
from harness.faults.credential_faults import CREDENTIAL_KINDS
from harness.faults.disk_faults import DISK_KINDS
from harness.faults.kind import FaultKind, KindSpec, ParamSpec
from harness.faults.link_faults import LINK_KINDS
from harness.faults.node_faults import NODE_KINDS
from harness.faults.packet_faults import PACKET_KINDS
from harness.faults.toxics import TOXIC_KINDS

__all__ = ["CATALOG", "OPERATIONS", "FaultKind", "KindSpec", "OperationKey", "OperationKind", "ParamSpec",
           "describe_catalog"]

_KINDS: tuple[FaultKind, ...] = (*NODE_KINDS, *LINK_KINDS, *TOXIC_KINDS, *PACKET_KINDS, *DISK_KINDS, *CLOCK_KINDS,
                                *CREDENTIAL_KINDS)

CATALOG: Mapping[str, FaultKind] = MappingProxyType({k.spec.name: k for k in _KINDS})
"""Every fault kind by name: its specification and its behaviour (`harness.faults.kind.FaultKind`). A new kind is
a `FaultKind` in the module of its family (or a new one), listed here."""


@dataclass(frozen=True, slots=True)
class OperationKey:
    """One key of an operation's schedule entry (besides `at` and `action`)."""

    name: str
    help: str
    required: bool = False


@dataclass(frozen=True, slots=True)
class OperationKind:
    """One kind of operation (`action:` in the schedule). It starts at `at` and runs in the background
    until it is done or its `timeout` passes (faults keep firing meanwhile); `op.start` and `op.end`
    record it, `op.end` with its outcome."""

    name: str
    help: str
    keys: tuple[OperationKey, ...]
    default_timeout: float
    how: Mapping[str, str]
    """How it is carried out, per broker kind."""


_TOPIC = OperationKey("topic", "the topic (declared under `topics`)", required=True)
_PARTITIONS = OperationKey("partitions", "partition numbers, e.g. [0, 2] (default: every partition of the topic)")
_TIMEOUT = OperationKey("timeout", "how long to wait for it to finish before recording `timeout`")

OPERATIONS: Mapping[str, OperationKind] = MappingProxyType({k.name: k for k in (
    OperationKind("reassign", "Move partitions to new replica lists (reassignment: new replicas catch up, the "
                  "leader moves if it is not in the new list, replicas leaving are dropped), and wait until done.",
                  (_TOPIC, _PARTITIONS,
                   OperationKey("replicas", "new replica list per partition, e.g. {0: [2, 3, 1]} (first = "
                                "preferred leader); or"),
                   OperationKey("shuffle", "true: each partition gets replication_factor distinct brokers drawn "
                                "from the seed"), _TIMEOUT), 60.0,
                  MappingProxyType({"apache-kafka": "AlterPartitionReassignments, then ListPartitionReassignments "
                                    "until none of them is pending and Metadata lists the new replicas"})),
    OperationKind("elect_preferred", "Preferred replica election: each partition whose first replica (AR[0]) "
                  "is alive and in the ISR gets it as leader; the others keep theirs.",
                  (OperationKey("topic", "the topic (default: every partition of every topic)"), _PARTITIONS,
                   _TIMEOUT), 30.0,
                  MappingProxyType({"apache-kafka": "ElectLeaders (type PREFERRED)"})),
    OperationKind("add_partitions", "More partitions for a topic (CreatePartitions): the new ones get replicas "
                  "by Kafka's round robin and their first live replica as leader; keyed producers may now map a "
                  "key elsewhere, and consumer groups rebalance to take them.",
                  (_TOPIC, OperationKey("count", "the topic's partition count afterwards (more than it has)",
                                        required=True), _TIMEOUT), 30.0,
                  MappingProxyType({"apache-kafka": "CreatePartitions, then Metadata until every new partition "
                                    "has a leader"})),
    OperationKind("scale_consumers", "A consumer group grows or shrinks to `members` live members: new members "
                  "join with new clients; leaving ones (the highest-numbered) close cleanly (LeaveGroup), or "
                  "abruptly with `abrupt: true` (the group notices after session.timeout.ms). Done once the "
                  "clients have started or ended; the rebalance that follows is judged by the group checks.",
                  (OperationKey("group", "the consumer group (declared under `workload.consumers`)", required=True),
                   OperationKey("members", "the live member count afterwards (1..32)", required=True),
                   OperationKey("abrupt", "true: leaving members end without LeaveGroup (default false)")), 30.0,
                  MappingProxyType({"apache-kafka": "the harness's own librdkafka consumers"})),
    OperationKind("restart_producer", "Restart a producer's client, as an application redeploy does: sending "
                  "pauses, the old client delivers what it holds within `timeout` (with `abrupt: true` it purges "
                  "it at once: those writes' outcome is unknown), and a new client (an idempotent producer gets a "
                  "new producer id and epoch) sends on from the next value. Done once the new client sends.",
                  (OperationKey("producer", "the producer's id (declared under `workload.producers`)", required=True),
                   OperationKey("abrupt", "true: purge what the old client holds instead of delivering it "
                                "(default false)"),
                   OperationKey("zombie", "true (transactional producers): the old client is kept alive with a "
                                "transaction open; once the new client's init_transactions has fenced it, it writes "
                                "on and tries to commit, which Kafka must refuse (judged by txn.zombie_fenced)"),
                   OperationKey("timeout", "how long the old client may take to deliver what it holds")), 30.0,
                  MappingProxyType({"apache-kafka": "the harness's own librdkafka producer, closed and made anew"})),
    OperationKind("rolling_restart", "Restart brokers one at a time, the way operators roll a cluster: wait "
                  "until every partition's ISR holds all its replicas, stop the broker gracefully (controlled "
                  "shutdown moves its leaderships first), start it, wait for every ISR to be full again, then "
                  "the next. Each stop is recorded as a `stop` fault `<op>.<k>`; the timeout is per broker, and "
                  "a broker that does not come back within it ends the operation, named. It may run on into the "
                  "heal phase, which waits for it.",
                  (OperationKey("brokers", "the brokers in restart order, e.g. [3, 1, 2] (default: every broker "
                                "in id order)"),
                   OperationKey("timeout", "per broker: stop, start and full ISRs again within it")), 120.0,
                  MappingProxyType({"apache-kafka": "SIGTERM (controlled shutdown) and start, as the `stop` fault; "
                                    "Metadata until every ISR is full"})),
    OperationKind("upgrade", "Roll the nodes onto another Apache Kafka release, as Kafka's upgrade notes "
                  "prescribe: one at a time, wait until every ISR is full, stop the broker gracefully, start it "
                  "on release `to` with the same configuration and data, wait for every ISR to be full again, "
                  "then the next. ZooKeeper mode: `cluster.broker_config` must pin inter.broker.protocol.version "
                  "to the release the cluster runs (the notes' first step); `finalize_upgrade` bumps it. KRaft: "
                  "the dedicated controllers first, each caught up with the quorum leader before the next. Each "
                  "stop is a `stop` fault `<op>.<k>`; the timeout is per node.",
                  (OperationKey("to", "the release the brokers roll onto, e.g. \"3.9.2\" (newer than the one "
                                "they run; ZooKeeper mode ends at 3.9)", required=True),
                   OperationKey("brokers", "the brokers in upgrade order (default: every broker in id order)"),
                   OperationKey("timeout", "per broker: stop, start on the new release and full ISRs again within "
                                "it")), 180.0,
                  MappingProxyType({"apache-kafka": "SIGTERM (controlled shutdown), then a start on the other "
                                    "release's jars, as the `stop` fault",
                                    "containers": "not available: the process backend switches a broker's jars"})),
    OperationKind("finalize_upgrade", "Once every node runs the new release: in ZooKeeper mode set "
                  "inter.broker.protocol.version to it and restart the brokers one by one for it to take effect; "
                  "in KRaft bump metadata.version to the newest level the nodes support, as `kafka-features "
                  "upgrade` does, restarting nothing (the upgrade notes' last steps; after it, no downgrade). It "
                  "waits for a running `upgrade` to end first.",
                  (OperationKey("brokers", "the brokers in restart order (default: every broker in id order)"),
                   OperationKey("timeout", "per broker: stop, start and full ISRs again within it")), 180.0,
                  MappingProxyType({"apache-kafka": "server.properties rewritten with the new protocol version, "
                                    "then SIGTERM and start, as the `stop` fault; KRaft: UpdateFeatures, then "
                                    "DescribeFeatures until finalized",
                                    "containers": "not available: the process backend rewrites a broker's "
                                    "server.properties"})),
    OperationKind("migrate_to_kraft", "Migrate a ZooKeeper-mode cluster of Apache Kafka 3.9 to KRaft, Kafka's "
                  "procedure (\"ZooKeeper to KRaft Migration\", KIP-866), step by step, each step an "
                  "`op.start`/`op.end` pair with its name: `controllers` starts the KRaft quorum (`cluster."
                  "controllers`, formatted with ZooKeeper's cluster id) in migration mode; `brokers` rolls the "
                  "brokers with the migration settings; `copy` waits until the active controller has copied the "
                  "metadata (`/migration`'s kraft_metadata_offset > 0) and holds `/controller` (dual-write); "
                  "`brokers_kraft` rolls the brokers into KRaft brokers; `controllers_kraft` rolls the "
                  "controllers without the migration and ZooKeeper. Each broker or controller restart is a "
                  "`stop` fault `<op>.<k>`, waiting for full ISRs (a controller: caught up) as `rolling_restart` "
                  "does; faults keep firing in every step.",
                  (OperationKey("steps", "the steps to run, a prefix of controllers, brokers, copy, brokers_kraft, "
                                "controllers_kraft (default: all five; e.g. [controllers, brokers, copy] stays in "
                                "dual-write)"),
                   OperationKey("brokers", "the brokers in restart order for both broker rolls (default: every "
                                "broker in id order)"),
                   OperationKey("timeout", "per step, and per node within a roll")), 180.0,
                  MappingProxyType({"apache-kafka": "the controllers started, then each node's server.properties "
                                    "rewritten for its next phase between a SIGTERM and a start, as the `stop` "
                                    "fault; /migration read from ZooKeeper for the copy",
                                    "containers": "not available: the process backend rewrites a node's "
                                    "server.properties and starts the KRaft controllers"})),
)})
"""Every operation kind by name."""


def describe_catalog() -> str:
    """The text `kafka-chaos faults` prints: every fault kind, its targets, parameters and backend actions;
    then every operation, its keys and how it is carried out."""
    lines: list[str] = ["Faults (`fault:` in the schedule):", ""]
    for kind in (k.spec for k in _KINDS):
        lines.append(f"{kind.name}: {kind.help}")
        several = " (one `target:`, or several at one instant: `targets:` [...])" if kind.several else ""
        lines.append(f"    targets: {', '.join(sorted(kind.targets))}{several}; duration: {kind.duration}; "
                     f"at the end: {kind.heal}")
        for p in kind.params:
            extra = f" (one of {', '.join(p.choices)})" if p.choices else ""
            need = "required" if p.required else f"default {p.default}"
            lines.append(f"    {p.name} ({p.type}, {need}){extra}: {p.help}")
        for backend, action in kind.backends.items():
            lines.append(f"    {backend}: {action}")
    lines += ["", "Operations (`action:` in the schedule; they run until done or `timeout`):", ""]
    for op in OPERATIONS.values():
        lines.append(f"{op.name}: {op.help}")
        for key in op.keys:
            need = "required" if key.required else ("default " + f"{op.default_timeout:g}s"
                                                    if key.name == "timeout" else "optional")
            lines.append(f"    {key.name} ({need}): {key.help}")
        for broker, how in op.how.items():
            lines.append(f"    {broker}: {how}")
    return "\n".join(lines)
