"""Writes an `Experiment` back as YAML with every default filled in (`experiment.yaml` of a run)."""

from __future__ import annotations

from typing import Any

import yaml

from harness.experiment.cluster_fields import cluster_to_dict
from harness.experiment.durations import format_duration
from harness.experiment.schema import Experiment, ExploreSpec, FaultSpec, OperationSpec, TransactionSpec
from harness.faults.catalog import OPERATIONS


def _fault(f: FaultSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"at": format_duration(f.at), "fault": f.kind}
    if f.during is not None:
        out = {"during": f.during, **out}
    if f.targets:
        out["targets"] = [str(t) for t in f.targets]
    elif f.target is not None:
        out["target"] = str(f.target)
    if f.link is not None:
        out["link"] = str(f.link)
    if f.groups:
        out["groups"] = [[str(n) for n in g] for g in f.groups]
    if f.params:
        out["params"] = dict(f.params)
    if f.duration is not None:
        out["duration"] = format_duration(f.duration)
    if f.jitter:
        out["jitter"] = format_duration(f.jitter)
    return out


def _operation(op: OperationSpec) -> dict[str, Any]:
    out: dict[str, Any] = {"at": format_duration(op.at), "action": op.action}
    if op.topic is not None:
        out["topic"] = op.topic
    if op.partitions:
        out["partitions"] = list(op.partitions)
    if op.replicas:
        out["replicas"] = {p: list(r) for p, r in op.replicas}
    if op.shuffle:
        out["shuffle"] = True
    if op.count is not None:
        out["count"] = op.count
    if op.group is not None:
        out["group"] = op.group
        out["members"] = op.members
    if op.brokers:
        out["brokers"] = list(op.brokers)
    if op.producer is not None:
        out["producer"] = op.producer
    if op.abrupt:  # scale_consumers, restart_producer
        out["abrupt"] = True
    if op.zombie:
        out["zombie"] = True
    if op.to is not None:  # upgrade
        out["to"] = op.to
    if op.steps:  # migrate_to_kraft
        out["steps"] = list(op.steps)
    if any(k.name == "timeout" for k in OPERATIONS[op.action].keys):  # scale_consumers has none
        out["timeout"] = format_duration(op.timeout)
    return out


def _schedule(exp: Experiment) -> list[dict[str, Any]]:
    """Faults and operations in their schedule order (their indices interleave)."""
    entries = [(f.index, _fault(f)) for f in exp.schedule] + [(o.index, _operation(o)) for o in exp.operations]
    return [e for _, e in sorted(entries, key=lambda x: x[0])]


def experiment_to_dict(exp: Experiment) -> dict[str, Any]:
    return {
        "name": exp.name,
        "description": exp.description,
        "seed": exp.seed,
        "cluster": cluster_to_dict(exp.cluster),
        "topics": [{"name": t.name, "partitions": t.partitions, "replication_factor": t.replication_factor,
                    "config": dict(t.config)} for t in exp.topics],
        "workload": {
            "producers": [{"id": p.id, "topic": p.topic, "rate": p.rate, "acks": p.acks,
                           "idempotence": p.idempotence, "keys": p.keys, "config": dict(p.config),
                           **_transactions(p.transactions)}
                          for p in exp.workload.producers],
            "consumers": [{"group": g.group, "topics": list(g.topics), "members": g.members,
                           "strategy": g.strategy, "commit": g.commit, "isolation": g.isolation,
                           "config": dict(g.config)}
                          for g in exp.workload.consumers],
            "pipelines": [{"id": p.id, "input": p.input, "output": p.output, "group": p.group,
                           **_transactions(p.transactions)} for p in exp.workload.pipelines],
            "client": exp.workload.client,
            **({"client_version": exp.workload.client_version} if exp.workload.client_version else {}),
        },
        "steady_state": list(exp.steady_state),
        "steady_timeout": format_duration(exp.steady_timeout),
        "schedule": _schedule(exp),
        "duration": format_duration(exp.duration),
        "drain": format_duration(exp.drain),
        "verify": {"checks": list(exp.verify.checks), "allow": list(exp.verify.allow),
                   "slo": {"controller_failover": format_duration(exp.verify.slo.controller_failover),
                           "partition_unavailable": format_duration(exp.verify.slo.partition_unavailable),
                           "rebalance": format_duration(exp.verify.slo.rebalance),
                           **{k: format_duration(v) for k, v in exp.verify.slo.declared_optional().items()}}},
        **({"expect": {"fail": list(exp.verify.expect.fail), **({"why": exp.verify.expect.why}
                                                                 if exp.verify.expect.why else {})}}
           if exp.verify.expect.fail else {}),
        **({"explore": _explore(exp.explore)} if exp.explore != ExploreSpec() else {}),
    }


def _explore(e: ExploreSpec) -> dict[str, Any]:
    return {**({"faults": list(e.faults)} if e.faults else {}), "per_schedule": list(e.per_schedule),
            "durations": [format_duration(d) for d in e.durations],
            **({"window": [format_duration(w) for w in e.window]} if e.window is not None else {}),
            **({"overlap": e.overlap} if e.overlap != ExploreSpec().overlap else {}),
            **({"targets": list(e.targets)} if e.targets else {}),
            **({"rates": dict(e.rates)} if e.rates else {}),
            **({"concurrent": e.concurrent} if e.concurrent is not None else {})}


def dump_experiment(exp: Experiment) -> str:
    """Resolved YAML that `load_experiment_text` reads back into an equal spec (but for `source`)."""
    header = f"# Resolved from {exp.source}: every default filled in.\n"
    if exp.variant:
        header += f"# Matrix variant {exp.variant} (the matrix is expanded; this file is that one variant).\n"
    return header + yaml.safe_dump(experiment_to_dict(exp), sort_keys=False, default_flow_style=False)


def _transactions(t: TransactionSpec | None) -> dict[str, Any]:
    return {} if t is None else {"transactions": {"id": t.id, "records": t.records, "abort_rate": t.abort_rate,
                                                  "timeout": format_duration(t.timeout)}}
