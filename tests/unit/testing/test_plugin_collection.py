"""The pytest plugin without any cluster: collection, ids, options, markers and collection errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.experiment import load_experiments

ROOT = Path(__file__).resolve().parents[3]
MATRIX = ROOT / "tests/data/plugin/controller-kill-short.yaml"
CORPUS = sorted((ROOT / "experiments/known-bugs").glob("*.yaml"))


def _project(pytester: pytest.Pytester) -> Path:
    exp_dir = pytester.path / "experiments"
    shutil.copytree(ROOT / "experiments", exp_dir)
    shutil.copy(MATRIX, exp_dir / "nested.yaml")
    (pytester.path / "data").mkdir()
    (pytester.path / "data" / "notes.yaml").write_text("just: data\n")
    return exp_dir


def test_experiments_dir_collects_one_item_per_experiment_and_matrix_variant(pytester: pytest.Pytester) -> None:
    _project(pytester)
    result = pytester.runpytest("--co", "-q", "-p", "no:cacheprovider")
    result.assert_outcomes()
    lines = [line for line in result.outlines if "::" in line]
    corpus = [line for line in lines if line.startswith("experiments/known-bugs/")]
    assert corpus == [f"experiments/known-bugs/{e.name}.yaml::{e.label}" for path in CORPUS
                      for e in load_experiments(path)], "the known-bugs corpus (experiments/**), one item per release"
    assert sorted(set(lines) - set(corpus)) == sorted([
        "experiments/consumer-rebalance.yaml::consumer-rebalance",
        "experiments/consumer-rebalance-kip848.yaml::consumer-rebalance-kip848",
        "experiments/consumer-scaling.yaml::consumer-scaling",
        "experiments/clock-skew.yaml::clock-skew[mode=zookeeper]",
        "experiments/clock-skew.yaml::clock-skew[mode=kraft]",
        "experiments/controller-failover.yaml::controller-failover",
        "experiments/disk-faults.yaml::disk-faults[mode=zookeeper]",
        "experiments/disk-faults.yaml::disk-faults[mode=kraft]",
        "experiments/disk-full.yaml::disk-full[log_dirs=1]",
        "experiments/disk-full.yaml::disk-full[log_dirs=2]",
        "experiments/packet-loss.yaml::packet-loss",
        "experiments/power-loss.yaml::power-loss[flush.messages=9223372036854775807,mode=zookeeper]",
        "experiments/power-loss.yaml::power-loss[flush.messages=9223372036854775807,mode=kraft]",
        "experiments/power-loss.yaml::power-loss[flush.messages=1,mode=zookeeper]",
        "experiments/power-loss.yaml::power-loss[flush.messages=1,mode=kraft]",
        "experiments/correlated-partition.yaml::correlated-partition",
        "experiments/exactly-once-pipeline.yaml::exactly-once-pipeline",
        "experiments/kraft-controller-failover.yaml::kraft-controller-failover",
        "experiments/kraft-quorum-partition.yaml::kraft-quorum-partition",
        "experiments/kraft-rolling-upgrade.yaml::kraft-rolling-upgrade",
        "experiments/kraft-upgrade-rolling.yaml::kraft-upgrade-rolling",
        "experiments/leader-election.yaml::leader-election[mode=zookeeper]",
        "experiments/leader-election.yaml::leader-election[mode=kraft]",
        "experiments/reassignment.yaml::reassignment",
        "experiments/rolling-restart.yaml::rolling-restart",
        "experiments/rolling-upgrade.yaml::rolling-upgrade",
        "experiments/secured-failover.yaml::secured-failover[mode=zookeeper]",
        "experiments/secured-failover.yaml::secured-failover[mode=kraft]",
        "experiments/transactions.yaml::transactions",
        "experiments/upgrade-rolling.yaml::upgrade-rolling",
        "experiments/weak-durability.yaml::weak-durability",
        "experiments/zk-to-kraft-migration.yaml::zk-to-kraft-migration",
        "experiments/zookeeper-partition.yaml::zookeeper-partition",
        "experiments/nested.yaml::controller-kill-short[controller_failover=10s]",
        "experiments/nested.yaml::controller-kill-short[controller_failover=1s]",
    ])


def test_yaml_outside_the_globs_is_not_collected_unless_named(pytester: pytest.Pytester) -> None:
    _project(pytester)
    result = pytester.runpytest("--co", "-q", "data")
    assert "no tests collected" in result.stdout.str()
    named = pytester.runpytest("--co", "-q", "data/notes.yaml")
    named.stdout.fnmatch_lines(["*invalid experiment*notes.yaml*", "*notes.yaml:1:1: just: unknown key*"])


def test_invalid_experiment_is_a_collection_error_naming_file_line_and_field(pytester: pytest.Pytester) -> None:
    exp_dir = _project(pytester)
    text = (exp_dir / "leader-election.yaml").read_text().replace("acks: all", "acks: most", 1)
    (exp_dir / "leader-election.yaml").write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "acks: most" in t)
    result = pytester.runpytest("--co", "-q")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines([f"*leader-election.yaml:{line}:*: workload.producers[[]0[]].acks: acks must be*"])


def test_markers_are_registered_and_select_experiment_items(pytester: pytest.Pytester) -> None:
    _project(pytester)
    pytester.makepyfile(test_py="""
        import pytest
        pytestmark = pytest.mark.chaos_cluster(brokers=3)

        def test_plain():
            pass
    """)
    result = pytester.runpytest("--co", "-q", "--strict-markers", "-m", "not chaos")
    assert "test_py.py::test_plain" in result.stdout.str() and "nested.yaml" not in result.stdout.str()
    chaos = pytester.runpytest("--co", "-q", "--strict-markers", "-m", "chaos").stdout.str()
    assert "nested.yaml::controller-kill-short[controller_failover=1s]" in chaos and "test_plain" not in chaos


def test_options_appear_in_help_and_in_the_report_header(pytester: pytest.Pytester) -> None:
    help_text = pytester.runpytest("--help").stdout.str()
    for option in ("--chaos-backend", "--chaos-seed", "--chaos-runs-dir", "--spark-master", "chaos_experiments"):
        assert option in help_text
    _project(pytester)
    header = pytester.runpytest("--co", "-q", "--chaos-backend", "process", "--chaos-seed", "9", "-v")
    header.stdout.fnmatch_lines(["kafka-chaos: backend process, seed 9, runs in *runs"])


def test_several_seeds_make_one_item_per_experiment_and_seed_in_one_session(pytester: pytest.Pytester) -> None:
    """`--chaos-seed 3,5` collects every experiment (and variant) once per seed; the header names both."""
    exp_dir = _project(pytester)
    for path in exp_dir.glob("*.yaml"):
        if path.name not in {"controller-failover.yaml", "nested.yaml"}:
            path.unlink()
    header = pytester.runpytest("--co", "-q", "--chaos-seed", "3,5", "-v")
    header.stdout.fnmatch_lines(["kafka-chaos: backend auto, seeds 3, 5, runs in *runs"])
    out = pytester.runpytest("--co", "-q", "--chaos-seed", "3,5").stdout.str()
    for seed in (3, 5):
        assert f"controller-failover.yaml::controller-failover[seed={seed}]" in out
        assert f"nested.yaml::controller-kill-short[controller_failover=1s,seed={seed}]" in out
    bad = pytester.runpytest("--co", "-q", "--chaos-seed", "3,x")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "'3,x' is not a seed or a comma list of seeds" in bad.stderr.str()
