"""Benchmark: why the bulk checks keep hand-written Spark plans instead of one Python fold run by both evaluators
(issue 35: "Spark runs the fold with groupBy(...).applyInArrow, or a hand-written plan only where the benchmark
shows one is needed").

On the synthetic 5M-event history of `spark_checks_bench.py` (same generator, same --workdir), in one Spark
local[2] session, alternately, ROUNDS rounds each:
- the hand-written checks: `spark_checks_bench.BENCH_CHECKS` (delivery, consumer, group) on the loaded frames;
- two folds under `groupBy("topic", "partition").applyInArrow`, each (topic, partition) group's send/ack/poll/
  commit events handed to Python: the floor (every value touched once, summed: the least any fold must do) and
  a real one (the facts of three of the eleven checks: acked values, each polled value's offsets, each offset's
  values).

Prints each (best and first rounds) and its ratio to the checks. The issue lets the bulk checks keep hand-written
plans where the fold would make the 5M figures slower; this says by how much.

    .venv/bin/python benchmarks/fold_floor_bench.py [--events 5000000] [--workdir /tmp/kafka-chaos-bench]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import spark_checks_bench as scb  # noqa: E402

ROUNDS = 3
FOLD_TYPES = ("send", "ack", "poll", "commit")


def _touch(table: object) -> tuple[int, int]:
    """The floor: every value into Python once, summed."""
    total = 0
    for column in ("seq", "offset", "value"):
        for v in table.column(column).to_pylist():  # type: ignore[attr-defined]
            total += v or 0
    return table.num_rows, total  # type: ignore[attr-defined]


def _delivery(table: object) -> tuple[int, int]:
    """A real fold, the facts of three of the checks (delivery.lost_write, duplicate, inconsistent_offsets) for
    one partition: the acked values, each polled value's offsets and each offset's values; (lost, conflicts)."""
    acked: set[int] = set()
    offsets_of: dict[int, set[int]] = {}
    values_at: dict[int, set[int]] = {}
    kinds, values, offsets = (table.column(c).to_pylist() for c in ("type", "value", "offset"))  # type: ignore
    for kind, value, offset in zip(kinds, values, offsets, strict=True):
        if kind == "ack" and value is not None:
            acked.add(value)
        elif kind == "poll" and value is not None and offset is not None:
            offsets_of.setdefault(value, set()).add(offset)
            values_at.setdefault(offset, set()).add(value)
    lost = len(acked - offsets_of.keys())
    conflicts = sum(len(o) > 1 for o in offsets_of.values()) + sum(len(v) > 1 for v in values_at.values())
    return lost, conflicts


FOLDS = {"floor": _touch, "delivery": _delivery}


def fold_round(spark: object, events: object, step: str) -> tuple[float, int]:
    """(wall s, groups) of fold `step` over `events` (the loaded history's frame), per (topic, partition)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    fold_of = FOLDS[step]
    schema = pa.schema([("topic", pa.string()), ("partition", pa.int64()), ("a", pa.int64()), ("b", pa.int64())])

    def fold(table: pa.Table) -> pa.Table:
        a, b = fold_of(table)
        topic = table.column("topic")[0].as_py() if table.num_rows else None
        part = table.column("partition")[0].as_py() if table.num_rows else None
        return pa.table({"topic": [topic], "partition": [part], "a": [a], "b": [b]}, schema=schema)

    t0 = time.perf_counter()
    frame = events.where(F.col("type").isin(*FOLD_TYPES)).select(  # type: ignore[attr-defined]
        "type", "topic", "partition", "seq", "offset", "value")
    out = frame.groupBy("topic", "partition").applyInArrow(
        fold, "topic string, partition long, a long, b long").collect()
    return time.perf_counter() - t0, len(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--events", type=int, default=5_000_000)
    p.add_argument("--workdir", type=Path, default=Path("/tmp/kafka-chaos-bench"))
    args = p.parse_args()
    try:
        import pandas  # noqa: F401  (PySpark's applyInArrow requires it, though it hands the function Arrow)
    except ImportError:
        sys.exit("fold_floor_bench.py needs pandas for PySpark's applyInArrow: .venv/bin/pip install '.[bench]'")
    from spark_analysis.ingest.load import load_history
    from spark_analysis.session.spark_session import get_session

    run_dir = args.workdir / f"h{args.events}"
    if not (run_dir / "history.jsonl").is_file():
        t = time.perf_counter()
        scb.generate(run_dir, args.events)
        print(f"generated {run_dir / 'history.jsonl'} in {time.perf_counter() - t:.1f}s", flush=True)
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers run the fold: this venv's Python, with pyarrow
    spark = get_session("local[2]")
    try:
        loaded = load_history(spark, run_dir / "history.jsonl")
        kinds = loaded.events.where(loaded.events.type.isin(*FOLD_TYPES)).count()
        checks: list[float] = []
        folds: dict[str, list[float]] = {k: [] for k in FOLDS}
        groups = 0
        for r in range(ROUNDS):
            checks.append(scb._checks_round(spark, run_dir, loaded)[0])
            for step in FOLDS:
                wall, groups = fold_round(spark, loaded.events, step)
                folds[step].append(wall)
            print(f"round {r + 1}: checks {checks[-1]:.1f}s, " + ", ".join(f"{k} fold {v[-1]:.1f}s"
                                                                          for k, v in folds.items()), flush=True)
    finally:
        spark.stop()
    print(f"\n{args.events:,} events, {kinds:,} of them {'/'.join(FOLD_TYPES)}, in {groups} (topic, partition) "
          f"groups; Spark local[2]")
    print(f"hand-written checks ({len(scb.BENCH_CHECKS)}): best {min(checks):6.1f}s  first {checks[0]:6.1f}s")
    for step, walls in folds.items():
        print(f"{step + ' fold':<26} best {min(walls):6.1f}s  first {walls[0]:6.1f}s  = "
              f"{min(walls) / min(checks):.2f}x the checks (best rounds)")
    print("floor: every value into Python once; delivery: the facts of 3 of the 11 checks (lost, duplicate, "
          "inconsistent offsets)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
