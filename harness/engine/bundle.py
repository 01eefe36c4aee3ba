"""The run bundle: `runs/<experiment>-<utc-stamp>/` with the resolved `experiment.yaml`, `run.json`
(versions, seed, backend and why, broker flavour, verify settings, status) and `history.jsonl`.

`run.json` is rewritten atomically at each update, so a crash leaves the last complete one.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import harness
from harness.engine.parts import value_base
from harness.experiment.dump import dump_experiment
from harness.experiment.schema import Experiment


def utc_stamp(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")


def java_version() -> str | None:
    java = shutil.which("java")
    if java is None:
        return None
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = (out.stderr or out.stdout).splitlines()
    return first[0].strip() if first else None


def _package_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def versions() -> dict[str, Any]:
    import confluent_kafka

    return {
        "harness": harness.__version__,
        "python": platform.python_version(),
        "java": java_version(),
        "librdkafka": confluent_kafka.libversion()[0],
        "confluent_kafka": _package_version("confluent-kafka"),
        "kazoo": _package_version("kazoo"),
        "pyspark": _package_version("pyspark"),
        "platform": platform.platform(),
    }


def workload_settings(exp: Experiment) -> dict[str, Any]:
    """What the checks need of the workload to know which promises its configuration asks Kafka for
    (`spark_analysis.runinfo.WriterSettings`): each writer's value range, acks, idempotence, transactions and
    `max.in.flight.requests.per.connection` (as librdkafka reads it; None: its default), each group's isolation."""
    def in_flight(config: Any) -> int | None:
        text = str(config.get("max.in.flight.requests.per.connection", config.get("max.in.flight", ""))).strip()
        return int(text) if text.isdigit() else None

    return {
        "producers": [{"id": p.id, "topic": p.topic, "acks": p.acks, "idempotence": p.idempotence,
                       "transactional": p.transactions is not None, "max_in_flight": in_flight(p.config),
                       "value_base": value_base(exp, p.id)} for p in exp.workload.producers],
        "pipelines": [{"id": p.id, "topic": p.output, "acks": "all", "idempotence": True, "transactional": True,
                       "max_in_flight": None, "value_base": value_base(exp, p.id)} for p in exp.workload.pipelines],
        "consumers": [{"group": c.group, "topics": list(c.topics), "isolation": c.isolation}
                      for c in exp.workload.consumers],
    }


@dataclass(slots=True)
class RunBundle:
    dir: Path
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def history(self) -> Path:
        return self.dir / "history.jsonl"

    @property
    def run_json(self) -> Path:
        return self.dir / "run.json"

    @classmethod
    def create(cls, runs_dir: Path, exp: Experiment, *, backend: str, backend_reason: str) -> RunBundle:
        runs_dir.mkdir(parents=True, exist_ok=True)
        variant = re.sub(r"[^A-Za-z0-9._=+-]+", "_", exp.variant.replace(",", "_"))
        base = f"{exp.name}-{variant + '-' if variant else ''}{utc_stamp()}"
        path = runs_dir / base
        n = 1
        while True:
            try:
                path.mkdir()
                break
            except FileExistsError:
                n += 1
                path = runs_dir / f"{base}-{n}"
        (path / "experiment.yaml").write_text(dump_experiment(exp), encoding="utf-8")
        slo = exp.verify.slo
        bundle = cls(path, {
            "experiment": exp.name,
            "variant": exp.variant,
            "source": exp.source,
            "seed": exp.seed,
            "backend": backend,
            "backend_reason": backend_reason,
            "broker": {"flavour": None, "version": None, "bugs": list(exp.cluster.reference_bugs)},
            "cluster": {"brokers": exp.cluster.brokers, "zookeepers": exp.cluster.zookeepers,
                        "mode": exp.cluster.mode, "controllers": exp.cluster.controllers,
                        "combined": exp.cluster.combined, "features": dict(exp.cluster.features),
                        "offsets_topic_partitions": int(exp.cluster.broker_config.get(
                            "offsets.topic.num.partitions", 50)),
                        # the verifiers read broker settings from here (unclean.leader.election.enable)
                        "broker_config": {k: str(v) for k, v in exp.cluster.broker_config.items()}},
            "workload": workload_settings(exp),
            "topics": [{"name": t.name, "partitions": t.partitions, "replication_factor": t.replication_factor,
                        "config": dict(t.config)} for t in exp.topics],
            "versions": versions(),
            "started": datetime.now(UTC).isoformat(),
            "ended": None,
            "status": "running",
            "verify": {"checks": list(exp.verify.checks), "allow": list(exp.verify.allow),
                       "slo": {"controller_failover": slo.controller_failover,
                               "partition_unavailable": slo.partition_unavailable, "rebalance": slo.rebalance,
                               **slo.declared_optional()},
                       "expect": {"fail": list(exp.verify.expect.fail), "why": exp.verify.expect.why}},
            "argv": sys.argv,
        })
        bundle.save()
        return bundle

    def update(self, **fields: Any) -> None:
        self.info.update(fields)
        self.save()

    def save(self) -> None:
        tmp = self.run_json.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.info, indent=2, default=str) + "\n", encoding="utf-8")
        os.replace(tmp, self.run_json)

    def finish(self, status: str, **fields: Any) -> None:
        self.update(status=status, ended=datetime.now(UTC).isoformat(), **fields)
