"""The run bundle: `runs/<experiment>-<utc-stamp>/` with the resolved `experiment.yaml`, `run.json`
(versions, seed, backend and why, broker flavour, verify settings, status) and `history.jsonl`.

`run.json` is rewritten atomically at each update, so a crash leaves the last complete one.
"""

from __future__ import annotations

import errno
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
from harness.cluster.owners import owner_alive as process_alive
from harness.cluster.owners import this_owner
from harness.engine.parts import value_base
from harness.errors import StorageError, free_bytes_at
from harness.experiment.dump import dump_experiment
from harness.experiment.schema import Experiment

RESERVE_FILE = ".reserve"
RESERVE_BYTES = 1024 * 1024
"""Room a run keeps for its own end: should the disk fill up, freeing it lets the history's last lines, run.json
and the report of the failure be written. Removed when the run finishes."""
MIN_FREE_BYTES = 32 * 1024 * 1024
"""A run does not start with less free under the runs directory (brokers of the process backend keep their logs
and data there too)."""


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


def client_info(exp: Experiment, broker_version: str | None) -> dict[str, Any]:
    """run.json's `client`: the library the workloads ran on and its version (the Java client's is known once the
    broker's release is, when the experiment names none)."""
    if exp.workload.client == "java":
        version = exp.workload.java_release(broker_version) if broker_version else exp.workload.client_version
        return {"name": "java", "library": "kafka-clients", "version": version}
    if exp.workload.client_version is not None:
        return {"name": "librdkafka", "library": "confluent-kafka", "version": exp.workload.client_version}
    import confluent_kafka

    return {"name": "librdkafka", "library": "confluent-kafka", "version": confluent_kafka.libversion()[0]}


def workload_settings(exp: Experiment) -> dict[str, Any]:
    """What the checks need of the workload to know which promises its configuration asks Kafka for
    (`spark_analysis.ingest.runinfo.WriterSettings`): each writer's value range, acks, idempotence, transactions and
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

    @property
    def reserve(self) -> Path:
        return self.dir / RESERVE_FILE

    @classmethod
    def create(cls, runs_dir: Path, exp: Experiment, *, backend: str, backend_reason: str) -> RunBundle:
        """A new run directory with its experiment.yaml, run.json and reserve; a `StorageError` (nothing left
        behind) when the runs directory cannot take them: full, read-only, or under `MIN_FREE_BYTES` free."""
        try:
            runs_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StorageError.at(runs_dir, exc) from exc
        free = free_bytes_at(runs_dir)
        if free is not None and free < MIN_FREE_BYTES:
            raise StorageError(runs_dir, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)), free,
                               hint=f"a run needs at least {MIN_FREE_BYTES // 2**20} MiB free there")
        path = cls._new_dir(runs_dir, exp)
        try:
            return cls._fill(path, exp, backend=backend, backend_reason=backend_reason)
        except OSError as exc:
            shutil.rmtree(path, ignore_errors=True)  # a run directory holding only experiment.yaml helps no one
            raise StorageError.at(runs_dir, exc) from exc

    @staticmethod
    def _new_dir(runs_dir: Path, exp: Experiment) -> Path:
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
            except OSError as exc:
                raise StorageError.at(runs_dir, exc) from exc
        return path

    @classmethod
    def _fill(cls, path: Path, exp: Experiment, *, backend: str, backend_reason: str) -> RunBundle:
        with open(path / RESERVE_FILE, "wb") as fh:  # written, not allocated: tmpfs and some filesystems lie
            fh.write(b"\0" * RESERVE_BYTES)
        (path / "experiment.yaml").write_text(dump_experiment(exp), encoding="utf-8")
        slo = exp.verify.slo
        bundle = cls(path, {
            "experiment": exp.name,
            "variant": exp.variant,
            "source": exp.source,
            "seed": exp.seed,
            "backend": backend,
            "backend_reason": backend_reason,
            "broker": {"flavour": None, "version": None},
            "cluster": {"brokers": exp.cluster.brokers, "zookeepers": exp.cluster.zookeepers,
                        "mode": exp.cluster.mode, "controllers": exp.cluster.controllers,
                        "combined": exp.cluster.combined, "features": dict(exp.cluster.features),
                        "offsets_topic_partitions": int(exp.cluster.broker_config.get(
                            "offsets.topic.num.partitions", 50)),
                        # the verifiers read broker settings from here (unclean.leader.election.enable)
                        "broker_config": {k: str(v) for k, v in exp.cluster.broker_config.items()}},
            "workload": workload_settings(exp),
            "client": client_info(exp, None),
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
            "owner": owner(),
        })
        bundle.save()
        return bundle

    def update(self, **fields: Any) -> None:
        self.info.update(fields)
        self.save()

    def save(self) -> None:
        tmp = self.run_json.with_suffix(".json.tmp")
        try:
            tmp.write_text(json.dumps(self.info, indent=2, default=str) + "\n", encoding="utf-8")
            os.replace(tmp, self.run_json)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise StorageError.at(self.run_json, exc) from exc

    def finish(self, status: str, **fields: Any) -> None:
        self.update(status=status, ended=datetime.now(UTC).isoformat(), **fields)
        self.reserve.unlink(missing_ok=True)

    def release_reserve(self) -> bool:
        """Free the reserve (the disk filled up: the run's end, run.json and the report of it need the room).
        False when there was none left to free."""
        try:
            self.reserve.unlink()
        except FileNotFoundError:
            return False
        return True


def owner() -> dict[str, Any]:
    """Who writes this run (pid and process start time): a later run tells a live run from a killed one."""
    pid, created = this_owner()
    return {"pid": pid, "created": created, "host": platform.node()}


def owner_alive(info: dict[str, Any]) -> bool:
    """Whether the process that wrote `info` (a run.json) is still running, on this host."""
    who = info.get("owner")
    if not isinstance(who, dict) or who.get("host") != platform.node():
        return False
    try:
        return process_alive(int(who["pid"]), float(who["created"]))
    except (KeyError, TypeError, ValueError):
        return False


def run_is_up(info: dict[str, Any]) -> bool:
    """Whether the run whose run.json is `info` is still going: marked running, and its harness alive here (its
    cluster is torn down at its end)."""
    return info.get("status") == "running" and owner_alive(info)


def last_run_note(runs_dir: Path) -> str | None:
    """What the newest run under `runs_dir` left, when it did not end well: failed (a full disk), or still marked
    running though its harness is gone (killed, the machine stopped). None when it ended otherwise."""
    try:
        newest = max((p for p in runs_dir.iterdir() if (p / "run.json").is_file()),
                     key=lambda p: p.stat().st_mtime, default=None)
        info = json.loads((newest / "run.json").read_text(encoding="utf-8")) if newest is not None else None
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or newest is None:
        return None
    status = info.get("status")
    if status == "failed":
        return f"the last run here, {newest}, failed: {info.get('error')}"
    if status == "running" and not owner_alive(info):
        return (f"the last run here, {newest}, never finished (its harness was killed, or the machine stopped); "
                f"what it recorded can still be verified (never as pass): kafka-chaos verify {newest}")
    return None
