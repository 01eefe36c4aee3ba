"""Cross-field rules of an experiment: references (topics, groups, broker and ZooKeeper ids,
partitions, consumer members), replication factor vs brokers, faults inside the experiment's
duration, faults whose kinds forbid overlapping on the same target, producers that would send
more values than their share of the value space."""

from __future__ import annotations

import math

from harness.experiment.durations import format_duration
from harness.experiment.fields import Fields
from harness.experiment.limits import MAX_VALUES_PER_PRODUCER
from harness.experiment.schema import Experiment, FaultSpec, OperationSpec
from harness.experiment.yamlsource import Path
from harness.faults.catalog import CATALOG
from harness.faults.clock_faults import MIN_STROBE_S
from harness.faults.targets import Target


def check_rules(f: Fields, exp: Experiment) -> None:
    brokers = exp.cluster.brokers
    for i, topic in enumerate(exp.topics):
        if topic.replication_factor > brokers:
            f.error(("topics", i, "replication_factor"),
                    f"replication factor is above the number of brokers ({brokers})", topic.replication_factor)
    sending = exp.duration + 2 * exp.steady_timeout
    for i, p in enumerate(exp.workload.producers):
        if p.rate * sending > MAX_VALUES_PER_PRODUCER:
            f.error(("workload", "producers", i, "rate"), f"at this rate the producer would send more than "
                    f"{MAX_VALUES_PER_PRODUCER:.0e} values in up to {format_duration(sending)} (duration + twice "
                    "steady_timeout), and its values would collide with the next producer's", p.rate,
                    "lower the rate or the durations")
        if exp.topic(p.topic) is None:
            f.error(("workload", "producers", i, "topic"), "topic is not declared under `topics`", p.topic,
                    _declared("topics", [t.name for t in exp.topics]))
    for i, pipe in enumerate(exp.workload.pipelines):
        for key, name in (("input", pipe.input), ("output", pipe.output)):
            if exp.topic(name) is None:
                f.error(("workload", "pipelines", i, key), "topic is not declared under `topics`", name,
                        _declared("topics", [t.name for t in exp.topics]))
    for i, c in enumerate(exp.workload.consumers):
        for j, name in enumerate(c.topics):
            if exp.topic(name) is None:
                f.error(("workload", "consumers", i, "topics", j), "topic is not declared under `topics`", name,
                        _declared("topics", [t.name for t in exp.topics]))
    for fault in exp.schedule:
        _check_fault(f, exp, fault)
    counts = {t.name: t.partitions for t in exp.topics}
    for op in sorted(exp.operations, key=lambda o: (o.at, o.index)):
        _check_operation(f, exp, op, counts)
    _check_overlaps(f, exp)


def _declared(what: str, names: list[str]) -> str:
    return f"declared {what}: {', '.join(names)}" if names else f"no {what} are declared"


def _check_fault(f: Fields, exp: Experiment, fault: FaultSpec) -> None:
    path: Path = ("schedule", fault.index)
    end = fault.at + fault.jitter + (fault.duration or 0.0)
    since = "" if fault.during is None else f" even if {fault.during} began at once"
    if fault.at >= exp.duration:
        f.error((*path, "at"), f"fault is scheduled at or after the experiment's duration "
                f"({format_duration(exp.duration)}){since}", format_duration(fault.at))
    elif end > exp.duration:
        f.error((*path, "duration"), f"fault ends at {format_duration(end)}, after the experiment's duration "
                f"({format_duration(exp.duration)}){since}", format_duration(fault.duration or 0.0))
    if exp.cluster.mode == "kraft" and fault.kind in ("isolate_zookeeper", "kill_zookeeper"):
        f.error((*path, "fault"), "a KRaft cluster has no ZooKeeper", fault.kind,
                "isolate or kill a controller (target: controller, controller:any, controller:<id>)")
    if fault.kind == "isolate" and fault.params.get("from") == "voters" and (
            exp.cluster.mode != "kraft" or fault.target is None
            or fault.target.kind not in ("controller", "any-controller")):
        f.error((*path, "params", "from"), "from: voters cuts a KRaft controller off from the other voters, and "
                f"this fault's target is {fault.target} in a {exp.cluster.mode}-mode cluster", "voters",
                "target: controller (the quorum's leader), controller:any or controller:<id> in a KRaft cluster")
    directory = fault.params.get("dir", 0) if fault.kind in ("disk_full", "disk_error") else 0
    if isinstance(directory, int) and directory >= exp.cluster.log_dirs:
        f.error((*path, "params", "dir"), f"the nodes have {exp.cluster.log_dirs} log directories (cluster.log_dirs), "
                "numbered from 0", directory, f"dir: 0 to {exp.cluster.log_dirs - 1}, or more cluster.log_dirs")
    if fault.kind == "credential_rotation" and exp.cluster.security.sasl != "scram-sha-512":
        f.error((*path, "fault"), "credential_rotation changes a SCRAM password, and this cluster has "
                f"{exp.cluster.security.describe()} (PLAIN's users are fixed in the brokers' JAAS configuration)",
                fault.kind, "cluster: {security: {tls: true, sasl: scram-sha-512}}")
    if fault.kind == "disk_full" and not exp.cluster.log_dir_mb:
        f.error((*path, "fault"), "disk_full fills a size-limited log directory, and cluster.log_dir_mb is not set",
                fault.kind, "cluster: {log_dir_mb: 64} puts each log directory on a 64 MB tmpfs (process backend)")
    probability = fault.params.get("probability") if fault.kind in ("packet_loss", "disk_error") else None
    if isinstance(probability, (int, float)) and not 0 < probability <= 1:
        what = "packets dropped" if fault.kind == "packet_loss" else "operations failed"
        f.error((*path, "params", "probability"), f"the fraction of {what} is in (0, 1]", probability,
                "e.g. probability: 0.1 fails one in ten")
    strobe = fault.params.get("strobe_s") if fault.kind == "clock_skew" else None
    if isinstance(strobe, (int, float)) and 0 < strobe < MIN_STROBE_S:
        f.error((*path, "params", "strobe_s"), f"a node follows its clock's offset 1.6-2 s after a change (libfaketime "
                f"reads it once a second), so a strobe flips it every {MIN_STROBE_S:g} s at the fastest", strobe,
                f"strobe_s: {MIN_STROBE_S:g} or more, or 0 for one step")
    pattern = fault.params.get("pattern") if fault.kind == "disk_error" else None
    if isinstance(pattern, str) and (pattern.startswith("/") or ".." in pattern.split("/")):
        f.error((*path, "params", "pattern"), "a glob of paths under the log directory, not outside it", pattern,
                "e.g. pattern: 'orders-0/*' (one partition's directory) or '*.index'")
    if fault.targets:
        for i, node in enumerate(fault.targets):
            _check_target(f, exp, (*path, "targets", i), node)
    elif fault.target is not None:
        _check_target(f, exp, (*path, "target"), fault.target)
    if fault.link is not None:
        if fault.link.src is not None:
            _check_target(f, exp, (*path, "link"), fault.link.src)
        if fault.link.dst.id is not None or fault.link.dst.kind != "zookeeper":
            _check_target(f, exp, (*path, "link"), fault.link.dst)
        if fault.link.src is not None and fault.link.src == fault.link.dst and fault.link.src.is_static:
            f.error((*path, "link"), "a link joins two different nodes", str(fault.link))
    for gi, group in enumerate(fault.groups):
        for ni, node in enumerate(group):
            _check_target(f, exp, (*path, "groups", gi, ni), node)


def _check_operation(f: Fields, exp: Experiment, op: OperationSpec, counts: dict[str, int]) -> None:
    """An operation starts inside the experiment's duration and names declared topics, their partitions
    (as many as `counts` says the topic has by then: declared, grown by earlier `add_partitions`, which
    this updates) and existing brokers."""
    path: Path = ("schedule", op.index)
    if op.at >= exp.duration:
        f.error((*path, "at"), f"action is scheduled at or after the experiment's duration "
                f"({format_duration(exp.duration)})", format_duration(op.at))
    if op.group is not None:
        groups = [c.group for c in exp.workload.consumers]
        if op.group not in groups:
            f.error((*path, "group"), "group is not declared under `workload.consumers`", op.group,
                    _declared("groups", groups))
    if op.producer is not None:
        producers = [p.id for p in exp.workload.producers]
        if op.producer not in producers:
            f.error((*path, "producer"), "producer is not declared under `workload.producers`", op.producer,
                    _declared("producers", producers))
        elif op.zombie and next(p for p in exp.workload.producers if p.id == op.producer).transactions is None:
            f.error((*path, "zombie"), "only a transactional producer can be fenced (declare its `transactions`)",
                    op.zombie)

    for i, b in enumerate(op.brokers):
        if b > exp.cluster.brokers:
            f.error((*path, "brokers", i), f"broker {b} does not exist (brokers 1..{exp.cluster.brokers})", b)
    if op.topic is None:
        return
    topic = exp.topic(op.topic)
    if topic is None:
        f.error((*path, "topic"), "topic is not declared under `topics`", op.topic,
                _declared("topics", [t.name for t in exp.topics]))
        return
    have = counts.get(topic.name, topic.partitions)
    for p in op.partitions:
        if p >= have:
            f.error((*path, "partitions"), f"topic {topic.name!r} has {have} partitions (0..{have - 1})", p)
    for p, replicas in op.replicas:
        if p >= have:
            f.error((*path, "replicas", str(p)), f"topic {topic.name!r} has {have} partitions (0..{have - 1})", p)
        for b in replicas:
            if b > exp.cluster.brokers:
                f.error((*path, "replicas", str(p)), f"broker {b} does not exist (brokers 1..{exp.cluster.brokers})",
                        list(replicas))
                break
    if op.count is not None:
        if op.count <= have:
            f.error((*path, "count"), f"topic {topic.name!r} already has {have} partitions by then; the count is "
                    "the number afterwards and must be more", op.count)
        counts[topic.name] = max(have, op.count)
    if op.shuffle and topic.replication_factor > exp.cluster.brokers:
        f.error((*path, "shuffle"), "a shuffle draws replication_factor distinct brokers, more than there are",
                topic.replication_factor)


def _check_target(f: Fields, exp: Experiment, path: Path, t: Target) -> None:
    kraft = exp.cluster.mode == "kraft"
    if t.role == "controller" and not kraft and not exp.cluster.migrating:
        f.error(path, "controller nodes exist in KRaft clusters only, and in a migration's (in ZooKeeper mode the "
                "controller is a broker: target: controller)", str(t), "cluster.mode: kraft, or target: controller")
    elif t.kind == "controller" and t.id is not None:
        voters = exp.cluster.voter_ids()
        if t.id not in voters:
            f.error(path, f"the quorum's voters are {', '.join(f'controller:{v}' for v in voters)}", str(t),
                    "dedicated controllers are 101..100+controllers; combined voters are brokers 1..controllers")
    elif kraft and t.kind == "zookeeper":
        f.error(path, "a KRaft cluster has no ZooKeeper", str(t))
    elif t.kind == "broker" and t.id is not None and t.id > exp.cluster.brokers:
        f.error(path, f"the cluster has brokers 1..{exp.cluster.brokers}", str(t))
    elif t.kind == "zookeeper" and t.id is not None and t.id > exp.cluster.zookeepers:
        f.error(path, f"the cluster has ZooKeeper members 1..{exp.cluster.zookeepers}", str(t))
    elif t.kind == "leader":
        topic = exp.topic(t.topic or "")
        if topic is None:
            f.error(path, "topic is not declared under `topics`", str(t),
                    _declared("topics", [x.name for x in exp.topics]))
        elif (t.partition or 0) >= topic.partitions:
            f.error(path, f"topic {topic.name!r} has partitions 0..{topic.partitions - 1}", str(t))
    elif t.kind == "txn-coordinator":
        ids = [p.transactions.id for p in exp.workload.producers if p.transactions is not None]
        ids += [p.transactions.id for p in exp.workload.pipelines]
        if t.transactional_id not in ids:
            f.error(path, "no producer declares this transactional id (`transactions.id`)", str(t),
                    _declared("transactional ids", ids))
    elif t.kind in ("coordinator", "consumer"):
        group = exp.group(t.group or "")
        if group is None:
            f.error(path, "consumer group is not declared under `workload.consumers`", str(t),
                    _declared("groups", [c.group for c in exp.workload.consumers]))
        elif t.kind == "consumer" and (t.id or 0) >= group.members:
            f.error(path, f"group {group.group!r} has members 0..{group.members - 1}", str(t))
    elif t.kind == "producer":
        ids = [p.id for p in exp.workload.producers]
        if t.producer not in ids:
            f.error(path, "producer is not declared under `workload.producers`", str(t), _declared("producers", ids))


def _resources(fault: FaultSpec) -> set[str]:
    """What a fault holds while active, for the overlap rule (dynamic targets hold nothing)."""
    if fault.target is not None:
        return {str(t) for t in fault.nodes if t.is_static}
    if fault.link is not None:
        static = (fault.link.src is None or fault.link.src.is_static) and (
            fault.link.dst.is_static or fault.link.dst.id is None)
        return {str(fault.link)} if static else set()
    return {str(n) for g in fault.groups for n in g}


def _check_overlaps(f: Fields, exp: Experiment) -> None:
    """Each fault that overlaps an earlier one of its overlap class on a shared target is reported once,
    naming the first such fault (so a schedule of N clashing faults gives N problems, not N squared). Only faults
    timed from the same moment (the same `during`, or none) are compared."""
    faults = sorted(exp.schedule, key=lambda x: x.at)
    held = [(CATALOG[x.kind].spec.exclusive, _resources(x),
             math.inf if x.duration is None else x.at + x.jitter + x.duration) for x in faults]
    for j, b in enumerate(faults):
        cls_b, res_b, _ = held[j]
        if not cls_b or not res_b:
            continue
        for i in range(j):
            cls_a, res_a, a_end = held[i]
            if b.at >= a_end or cls_a != cls_b or res_a.isdisjoint(res_b) or faults[i].during != b.during:
                continue  # faults timed from different moments (`during`) are not compared: when is not known
            a = faults[i]
            shared = res_a & res_b
            until = "until the heal phase" if a.duration is None else f"until {format_duration(a_end)}"
            f.error(("schedule", b.index), f"overlaps fault {a.describe()} (from {format_duration(a.at)} "
                    f"{until}) on {', '.join(sorted(shared))}; {a.kind} and {b.kind} may not overlap on one "
                    "target", f"{b.kind} at {format_duration(b.at)}",
                    "give the first fault a duration that ends before, or move this one later")
            break
