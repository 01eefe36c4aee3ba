"""`python -m spark_analysis.jvm_archive_build [RUN_DIR]`: build the driver JVM's class-data-sharing archive.

Starts a session whose JVM writes the classes it loaded at exit (`-XX:ArchiveClassesAtExit`), verifies
RUN_DIR (else a small built-in history that takes the checks through their query shapes: writes, reads, a
consumer group, commits, a controller change), stops it, and puts the archive in place
(`jvm_archive.install_archive`). `make demo` and `make test` run it; it does nothing when the archive for
this Java runtime, pyspark and driver options is there already. Best effort: exit status 0 when no archive
could be built (it says why; verifiers then start without one), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from spark_analysis.session.jvm_archive import QUIET, archive_path, install_archive, usable_archive
from spark_analysis.session.spark_session import driver_java_options, get_session, stop_session
from spark_analysis.verify import verify_run

DUMP_TIMEOUT_S = 300.0
"""How long the training JVM may take to exit: it writes the archive (about 190 MB) on its way out."""
TRAINING_VALUES = 300


def training_history(run_dir: Path) -> Path:
    """Write a small, healthy run into `run_dir` (history.jsonl, run.json) and return `run_dir`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    events: list[dict[str, object]] = [{"src": "engine", "type": "run.start", "experiment": "jvm-archive"}]
    events += [{"src": "zk", "type": "broker.up", "broker": b} for b in (1, 2, 3)]
    events.append({"src": "zk", "type": "controller", "broker": 1, "epoch": 1})
    events += [{"src": "zk", "type": "partition.state", "topic": "orders", "partition": p, "leader": p + 1,
                "leader_epoch": 0, "isr": [1, 2, 3], "replicas": [1, 2, 3], "controller_epoch": 1} for p in range(3)]
    events.append({"src": "admin", "type": "group.state", "group": "g", "state": "Stable", "generation": 1,
                   "coordinator": 2, "leader": "m0", "protocol": "range", "members": ["m0"]})
    events.append({"src": "consumer:m0", "type": "assign", "group": "g", "member": "m0", "generation": 1,
                   "partitions": [["orders", p] for p in range(3)]})
    offsets = [0, 0, 0]
    for value in range(1, TRAINING_VALUES + 1):
        p = value % 3
        o = offsets[p]
        offsets[p] += 1
        common = {"value": value, "key": f"k{value % 17}", "topic": "orders"}
        events.append({"src": "producer:p1", "type": "send", "producer": "p1", "acks": "all", **common})
        events.append({"src": "producer:p1", "type": "ack", "producer": "p1", "partition": p, "offset": o,
                       "latency_ms": 2.0, **common})
        events.append({"src": "consumer:m0", "type": "poll", "consumer": "m0", "group": "g", "member": "m0",
                       "partition": p, "offset": o, **common})
        if value % 20 == 0:
            events.append({"src": "consumer:m0", "type": "commit", "group": "g", "member": "m0", "generation": 1,
                           "topic": "orders", "partition": p, "offset": o + 1})
        if value == TRAINING_VALUES // 2:
            events.append({"src": "zk", "type": "controller", "broker": 2, "epoch": 2})
    events.append({"src": "engine", "type": "run.end", "status": "completed"})
    with open(run_dir / "history.jsonl", "w", encoding="utf-8") as out:
        for i, event in enumerate(events):
            t = round(i * 0.01, 3)
            out.write(json.dumps({"t": t, "wall": 1_767_225_600_000 + int(t * 1000), **event}) + "\n")
    run = {"experiment": "jvm-archive", "seed": 1, "backend": "synthetic", "status": "completed",
           "verify": {"checks": ["all"], "allow": [], "slo": {}}}
    (run_dir / "run.json").write_text(json.dumps(run), encoding="utf-8")
    return run_dir


def build(run_dir: Path | None = None) -> tuple[Path, bool]:
    """The archive's path, and whether it was built now (False: it was there already)."""
    options = driver_java_options()
    existing = usable_archive(options)
    if existing is not None:
        return existing, False
    target = archive_path(options)
    if target is None:
        raise RuntimeError("no Java runtime found (JAVA_HOME, or java on PATH)")
    target.parent.mkdir(parents=True, exist_ok=True)
    written = target.with_name(f"{target.stem}.{os.getpid()}.tmp")
    spark = get_session("local[2]", [f"-XX:ArchiveClassesAtExit={written}", QUIET])
    trained = False
    try:
        with tempfile.TemporaryDirectory(prefix="kafka-chaos-jvm-archive-") as tmp:
            if run_dir is None:
                verify_run(training_history(Path(tmp) / "run"), spark=spark)
            else:
                verify_run(run_dir, spark=spark, write=False)
        trained = True
    finally:
        stop_session(spark, timeout_s=DUMP_TIMEOUT_S)  # the JVM writes the archive on its way out
        if not trained:
            written.unlink(missing_ok=True)  # a failed training keeps none
    return install_archive(written, options), True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m spark_analysis.jvm_archive_build",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", nargs="?", type=Path, default=None, metavar="RUN_DIR")
    args = parser.parse_args(argv)
    if args.run_dir is not None and not (args.run_dir / "history.jsonl").is_file():
        print(f"error: {args.run_dir} has no history.jsonl", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        path, built = build(args.run_dir)
    except Exception as exc:  # best effort: the verifiers start without an archive
        print(f"driver JVM class-data-sharing archive not built ({type(exc).__name__}: {exc}); "
              "the verifiers start without one", file=sys.stderr)
        return 0
    what = f"built in {time.monotonic() - started:.0f} s" if built else "already built"
    print(f"driver JVM class-data-sharing archive {what}: {path} ({path.stat().st_size / 1e6:.0f} MB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
