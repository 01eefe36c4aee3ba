"""The catalogue of schedule actions: the single source of fault kinds (their parameters, valid targets,
duration rules, which kinds may overlap on one target, and what each backend does for each kind) and of
operations (what an operator does to a healthy cluster: reassignment, preferred election, new partitions,
consumer scaling, producer restarts, rolling restarts; their keys and how each broker kind carries them out).

Validation of experiment files, `kafka-chaos faults` / `kafka-chaos actions`, the schedule and every backend
read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

ParamType = Literal["int", "float", "bool", "choice"]
TargetSlot = Literal["broker", "zookeeper", "consumer", "producer", "controller", "link", "groups"]
DurationRule = Literal["required", "optional", "forbidden"]


@dataclass(frozen=True, slots=True)
class ParamSpec:
    name: str
    type: ParamType
    help: str
    default: float | int | bool | str | None = None
    required: bool = False
    minimum: float | None = None
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FaultKind:
    """One kind of fault. `exclusive` names the overlap class: two faults of kinds with the same
    non-empty class may not overlap in time on the same (static) target."""

    name: str
    help: str
    targets: frozenset[TargetSlot]
    params: tuple[ParamSpec, ...]
    duration: DurationRule
    exclusive: str
    heal: str
    backends: Mapping[str, str]

    def param(self, name: str) -> ParamSpec | None:
        return next((p for p in self.params if p.name == name), None)


def _kind(name: str, help: str, targets: set[TargetSlot], params: tuple[ParamSpec, ...], duration: DurationRule,
          exclusive: str, heal: str, process: str, containers: str) -> FaultKind:
    return FaultKind(name, help, frozenset(targets), params, duration, exclusive, heal,
                     MappingProxyType({"process": process, "containers": containers}))


_STREAM = ParamSpec("stream", "choice", "which direction of the link: upstream (src to dst) or downstream "
                    "(dst's replies)", default="downstream", choices=("upstream", "downstream"))
_TOXICITY = ParamSpec("toxicity", "float", "probability (0..1) that a connection is affected, drawn once per "
                      "connection", default=1.0, minimum=0.0)


def _toxic(name: str, help: str, params: tuple[ParamSpec, ...]) -> FaultKind:
    return _kind(name, help, {"link"}, (*params, _STREAM, _TOXICITY), "required", f"toxic:{name}",
                 "removes the toxic", f"Toxiproxy `{name}` toxic on the link's proxy (embedded server or "
                 "TOXIPROXY_BIN)", f"Toxiproxy `{name}` toxic on the link's proxy (toxiproxy container)")


_KINDS: tuple[FaultKind, ...] = (
    _kind("kill", "Kill a node abruptly (kill -9): no controlled shutdown; ZooKeeper notices after the "
          "session timeout. A consumer target closes the member without leaving its group.",
          {"broker", "zookeeper", "consumer", "controller"}, (), "optional", "down", "starts the node again",
          "SIGKILL to the node's process group; consumers: member dropped", "docker kill (SIGKILL)"),
    _kind("stop", "Stop a broker gracefully (SIGTERM): controlled shutdown moves its leaderships first. A KRaft "
          "controller stops as well (a leader resigns on shutdown).",
          {"broker", "controller"}, (), "optional", "down", "starts the node again",
          "SIGTERM, wait for exit (SIGKILL after the stop timeout)", "docker stop (SIGTERM, then SIGKILL)"),
    _kind("pause", "Freeze a node (SIGSTOP): it holds its sockets but answers nothing; past the session "
          "timeout ZooKeeper expires it. A consumer target stops polling. A producer target's application stops "
          "sending, as in a long GC pause (librdkafka delivers what it was given): a transaction it holds open "
          "past transaction.timeout.ms is aborted by the coordinator, which fences the producer; the producer "
          "then starts a new session (`txn.fenced`).",
          {"broker", "zookeeper", "consumer", "producer", "controller"}, (), "required", "down",
          "resumes the node (SIGCONT)", "SIGSTOP / SIGCONT to the process group; producers: sending held",
          "docker pause / unpause; producers: sending held"),
    _kind("kill_zookeeper", "Kill a ZooKeeper member (kill -9).", {"zookeeper"}, (), "optional", "down",
          "starts the member again", "SIGKILL to the member's process group", "docker kill (SIGKILL)"),
    _kind("isolate", "Cut every link of a node. A broker: to and from every other broker, to ZooKeeper or the "
          "KRaft voters, and from clients. A KRaft controller: to and from the other voters, and from the "
          "brokers (it loses the quorum leadership after controller.quorum.fetch.timeout.ms).",
          {"broker", "controller"}, (), "required", "links", "re-enables the links",
          "disables every proxy whose name starts or ends with the broker", "same, on the toxiproxy container"),
    _kind("isolate_zookeeper", "Cut a broker's links to every ZooKeeper member: its session expires after "
          "the session timeout (controller moves, partitions it leads get new leaders).",
          {"broker"}, (), "required", "links", "re-enables the links",
          "disables proxies k->zk*", "same, on the toxiproxy container"),
    _kind("partition", "Network partition between groups of nodes: every directed link between nodes of "
          "different groups is cut (only from earlier to later groups with one_way).", {"groups"},
          (ParamSpec("one_way", "bool", "cut only links from a group to the groups listed after it",
                     default=False),), "required", "links", "re-enables the links",
          "disables the proxies of the cut links", "same, on the toxiproxy container"),
    _kind("cut", "Cut one directed link (disable its proxy: open connections close, new ones are "
          "refused).", {"link"}, (), "required", "toxic:cut", "re-enables the proxy",
          "disables the link's proxy", "same, on the toxiproxy container"),
    _toxic("latency", "Delay data on a link.", (
        ParamSpec("latency_ms", "int", "added delay in milliseconds", required=True, minimum=0),
        ParamSpec("jitter_ms", "int", "random +/- jitter in milliseconds", default=0, minimum=0))),
    _toxic("bandwidth", "Limit a link's bandwidth.", (
        ParamSpec("rate_kbps", "int", "rate in KB/s", required=True, minimum=0),)),
    _toxic("slicer", "Slice data into small pieces with delays between them.", (
        ParamSpec("average_size", "int", "average slice size in bytes", required=True, minimum=1),
        ParamSpec("size_variation", "int", "slice size variation in bytes", default=0, minimum=0),
        ParamSpec("delay_us", "int", "delay between slices in microseconds", default=0, minimum=0))),
    _toxic("reset_peer", "Reset connections (TCP RST) after a timeout.", (
        ParamSpec("timeout_ms", "int", "delay before the reset, ms", default=0, minimum=0),)),
    _toxic("timeout", "Stop all data; close the connection after timeout_ms (0: hold it open forever).", (
        ParamSpec("timeout_ms", "int", "ms before closing; 0 = black hole", default=0, minimum=0),)),
    _toxic("limit_data", "Close connections after a number of bytes.", (
        ParamSpec("bytes", "int", "bytes allowed per connection", required=True, minimum=0),)),
)

CATALOG: Mapping[str, FaultKind] = MappingProxyType({k.name: k for k in _KINDS})
"""Every fault kind by name."""

TOXIC_ATTRIBUTES: Mapping[str, Mapping[str, str]] = MappingProxyType({
    "latency": {"latency_ms": "latency", "jitter_ms": "jitter"},
    "bandwidth": {"rate_kbps": "rate"},
    "slicer": {"average_size": "average_size", "size_variation": "size_variation", "delay_us": "delay"},
    "reset_peer": {"timeout_ms": "timeout"},
    "timeout": {"timeout_ms": "timeout"},
    "limit_data": {"bytes": "bytes"},
})
"""Experiment parameter name -> Toxiproxy attribute name, per toxic kind."""


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
                                    "until none of them is pending and Metadata lists the new replicas",
                                    "reference": "writes /admin/reassign_partitions, waits until the controller "
                                    "deletes it and Metadata lists the new replicas"})),
    OperationKind("elect_preferred", "Preferred replica election: each partition whose first replica (AR[0]) "
                  "is alive and in the ISR gets it as leader; the others keep theirs.",
                  (OperationKey("topic", "the topic (default: every partition of every topic)"), _PARTITIONS,
                   _TIMEOUT), 30.0,
                  MappingProxyType({"apache-kafka": "ElectLeaders (type PREFERRED)",
                                    "reference": "ElectLeaders (type PREFERRED)"})),
    OperationKind("add_partitions", "More partitions for a topic (CreatePartitions): the new ones get replicas "
                  "by Kafka's round robin and their first live replica as leader; keyed producers may now map a "
                  "key elsewhere, and consumer groups rebalance to take them.",
                  (_TOPIC, OperationKey("count", "the topic's partition count afterwards (more than it has)",
                                        required=True), _TIMEOUT), 30.0,
                  MappingProxyType({"apache-kafka": "CreatePartitions, then Metadata until every new partition "
                                    "has a leader",
                                    "reference": "CreatePartitions, then Metadata until every new partition "
                                    "has a leader"})),
    OperationKind("scale_consumers", "A consumer group grows or shrinks to `members` live members: new members "
                  "join with new clients; leaving ones (the highest-numbered) close cleanly (LeaveGroup), or "
                  "abruptly with `abrupt: true` (the group notices after session.timeout.ms). Done once the "
                  "clients have started or ended; the rebalance that follows is judged by the group checks.",
                  (OperationKey("group", "the consumer group (declared under `workload.consumers`)", required=True),
                   OperationKey("members", "the live member count afterwards (1..32)", required=True),
                   OperationKey("abrupt", "true: leaving members end without LeaveGroup (default false)")), 30.0,
                  MappingProxyType({"apache-kafka": "the harness's own librdkafka consumers",
                                    "reference": "the harness's own librdkafka consumers"})),
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
                  MappingProxyType({"apache-kafka": "the harness's own librdkafka producer, closed and made anew",
                                    "reference": "the harness's own librdkafka producer, closed and made anew"})),
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
                                    "Metadata until every ISR is full",
                                    "reference": "SIGTERM (controlled shutdown) and start, as the `stop` fault; "
                                    "Metadata until every ISR is full"})),
)})
"""Every operation kind by name."""


def describe_catalog() -> str:
    """The text `kafka-chaos faults` prints: every fault kind, its targets, parameters and backend actions;
    then every operation, its keys and how it is carried out."""
    lines: list[str] = ["Faults (`fault:` in the schedule):", ""]
    for kind in _KINDS:
        lines.append(f"{kind.name}: {kind.help}")
        lines.append(f"    targets: {', '.join(sorted(kind.targets))}; duration: {kind.duration}; "
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
