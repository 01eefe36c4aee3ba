"""Benchmark: why the bulk checks keep hand-written Spark plans instead of one Python fold run by both evaluators
(issue 35: "Spark runs the fold with groupBy(...).applyInArrow, or a hand-written plan only where the benchmark
shows one is needed").

On the synthetic 5M-event history of `spark_checks_bench.py` (same generator, same --workdir), in one Spark
local[2] session, alternately, ROUNDS rounds each:
- the hand-written checks: `spark_checks_bench.BENCH_CHECKS` (delivery, consumer, group) on the loaded frames;
- the fold floor: the least any per-key Python fold over the same events must do under
  `groupBy("topic", "partition").applyInArrow`: hand each (topic, partition) group's send/ack/poll/commit events
  to Python and touch every value once (summing them), one row out per group. A real fold (the in-process
  evaluator's facts, a judge's inputs) does more per event, never less.

Prints both (best and first rounds), and the floor over the checks. When the floor alone is slower than the
checks, the fold design cannot be as fast as the plans it would replace at this size, and the 5M figures must not
get slower: the plans stay, held to the in-process evaluator's facts on every fixture and recorded run.

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


def fold_round(spark: object, events: object) -> tuple[float, int]:
    """(wall s, groups) of the fold floor over `events` (the loaded history's frame)."""
    import pyarrow as pa
    from pyspark.sql import functions as F

    def fold(table: pa.Table) -> pa.Table:
        total = 0
        for column in ("seq", "offset", "value"):
            for v in table.column(column).to_pylist():  # every value into Python, as a fold's step reads it
                total += v or 0
        topic = table.column("topic")[0].as_py() if table.num_rows else None
        part = table.column("partition")[0].as_py() if table.num_rows else None
        return pa.table({"topic": [topic], "partition": [part], "n": [table.num_rows], "total": [total]},
                        schema=pa.schema([("topic", pa.string()), ("partition", pa.int64()), ("n", pa.int64()),
                                          ("total", pa.int64())]))

    t0 = time.perf_counter()
    frame = events.where(F.col("type").isin(*FOLD_TYPES)).select(  # type: ignore[attr-defined]
        "topic", "partition", "seq", "offset", "value")
    out = frame.groupBy("topic", "partition").applyInArrow(
        fold, "topic string, partition long, n long, total long").collect()
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
        folds: list[float] = []
        groups = 0
        for r in range(ROUNDS):
            checks.append(scb._checks_round(spark, run_dir, loaded)[0])
            took, groups = fold_round(spark, loaded.events)
            folds.append(took)
            print(f"round {r + 1}: checks {checks[-1]:.1f}s, fold floor {folds[-1]:.1f}s", flush=True)
    finally:
        spark.stop()
    print(f"\n{args.events:,} events, {kinds:,} of them {'/'.join(FOLD_TYPES)}, in {groups} (topic, partition) "
          f"groups; Spark local[2]")
    print(f"hand-written checks ({len(scb.BENCH_CHECKS)}): best {min(checks):6.1f}s  first {checks[0]:6.1f}s")
    print(f"fold floor (applyInArrow):  best {min(folds):6.1f}s  first {folds[0]:6.1f}s")
    print(f"fold floor / checks: {min(folds) / min(checks):.2f}x (best rounds); above 1x the fold design is slower "
          "before it folds anything")
    return 0


if __name__ == "__main__":
    sys.exit(main())
