"""`python -m harness.nightly`: one pytest session for every seed into the night's directory, then the trend."""

from __future__ import annotations

import sys
from pathlib import Path

from harness.nightly import build_parser, pytest_command


def test_one_pytest_session_runs_every_experiment_with_every_seed_into_one_junit_file(tmp_path: Path) -> None:
    """All seeds go to one pytest session (one Spark session verifies every run of the night)."""
    args = build_parser().parse_args(["experiments/", "--seeds", "4", "5", "--backend", "process",
                                      "--spark-master", "local[2]"])
    cmd = pytest_command(args, tmp_path)
    assert cmd[:4] == [sys.executable, "-m", "pytest", "experiments/"]
    joined = " ".join(cmd)
    assert "--chaos-backend process --chaos-seed 4,5" in joined
    assert f"--chaos-runs-dir {tmp_path}" in joined and f"--junitxml={tmp_path / 'junit-seed-4-5.xml'}" in joined
    assert "--spark-master local[2]" in joined
    assert args.seeds == [4, 5]


def test_defaults_are_every_shipped_experiment_three_seeds_best_backend() -> None:
    args = build_parser().parse_args([])
    assert (args.experiments, args.seeds, args.backend, args.out) == (["experiments/"], [1, 2, 3], "auto",
                                                                      "runs/nightly")
