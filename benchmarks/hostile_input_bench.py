"""How fast the loader refuses hostile input (docs/design.md "Input limits"): deep nesting, an alias bomb, a file
over the size limit, and durations built to make a parser backtrack. Each is timed `--rounds` times and printed
(median and max); the goal is "well under a second" for each, on a 2-core machine.

Usage: .venv/bin/python benchmarks/hostile_input_bench.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from harness.errors import ValidationError  # noqa: E402
from harness.experiment import load_experiment_text, load_experiments  # noqa: E402
from harness.experiment.durations import parse_duration  # noqa: E402
from harness.experiment.limits import MAX_FILE_BYTES  # noqa: E402

HEAD = "name: x\nduration: 60s\n"
BOMB = "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10 if i else ["lol"] * 10) + "]\n" for i in range(10))
GOAL_S = 1.0


def refused(text: str) -> None:
    try:
        load_experiment_text(text, "hostile.yaml")
    except ValidationError:
        return
    raise AssertionError("accepted")


def durations() -> None:
    for text in ("1" * 100_000, "1" * 60, "1s" * 40):
        try:
            parse_duration(text)
        except ValueError:
            continue
        raise AssertionError(f"{text[:20]!r} accepted")


def timed(fn: Callable[[], None], rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append(time.perf_counter() - start)
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        big = Path(tmp) / "big.yaml"
        big.write_bytes(HEAD.encode() + b"description: " + b"a" * MAX_FILE_BYTES + b"\n")

        def oversize() -> None:
            try:
                load_experiments(big)
            except ValidationError:
                return
            raise AssertionError("accepted")

        cases: dict[str, Callable[[], None]] = {
            "nesting 5000 deep": lambda: refused(HEAD + "cluster: " + "[" * 5000 + "]" * 5000 + "\n"),
            "alias bomb (10^10 nodes)": lambda: refused(BOMB),
            f"file over {MAX_FILE_BYTES} bytes": oversize,
            "backtracking durations": durations,
        }
        worst = 0.0
        for name, fn in cases.items():
            took = timed(fn, args.rounds)
            worst = max(worst, max(took))
            print(f"  {name:<28} median {statistics.median(took) * 1000:7.1f} ms  max {max(took) * 1000:7.1f} ms")
    print(f"worst {worst * 1000:.1f} ms; goal < {GOAL_S * 1000:.0f} ms each")
    return 0 if worst < GOAL_S else 1


if __name__ == "__main__":
    sys.exit(main())
