"""Every bug flag of the reference broker is caught end to end by the check that owns it, and a clean run
of the same experiment passes.

Each flag runs the short experiment in tests/data/bug_experiments/ made to provoke it (its comment header
says how) on the process backend: 3 reference brokers in their own processes, a real ZooKeeper, the
embedded Toxiproxy, real librdkafka clients; the run is verified by the Spark verifiers. `BUG_CASES` is
the one map of flag -> experiment, owning checks and what their summary must name.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from harness.cluster.process import ProcessBackend
from harness.engine.runner import RunResult, run_experiment
from harness.experiment import load_experiment
from harness.experiment.schema import REFERENCE_BUGS
from tests.fixtures.process_cluster import reference_process_backend

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]

EXPERIMENTS = Path(__file__).resolve().parents[2] / "data" / "bug_experiments"


@dataclass(frozen=True, slots=True)
class BugCase:
    """How one bug flag is provoked and which checks catch it."""

    experiment: str
    """File under tests/data/bug_experiments/."""
    owners: tuple[str, ...]
    """Checks that must fail with the flag set."""
    names: str
    """Text the first owner's summary must contain (what the failure is about)."""
    xfail: str | None = None
    """Why the owners do not catch the flag yet (a verifier gap): strict xfail. None today."""

BUG_CASES: dict[str, BugCase] = {
    "elect_outside_isr": BugCase("controller.yaml", ("partition.leader_in_isr", "partition.election_conforms"),
                                 "not in ISR"),
    "skip_epoch_bump": BugCase("controller.yaml", ("controller.epoch_monotonic", "controller.unique"),
                               "without a new epoch"),
    "zombie_controller": BugCase("controller.yaml", ("controller.epoch_monotonic",),
                                 "stale controller view"),
    "ack_before_replication": BugCase("lost-write.yaml", ("delivery.lost_write",), "lost"),
    "ignore_idempotence": BugCase("duplicate.yaml", ("delivery.duplicate",), "more than one offset"),
    "reuse_producer_ids": BugCase("duplicate.yaml", ("delivery.fatal_error",), "OUT_OF_ORDER_SEQUENCE_NUMBER"),
    "double_assignment": BugCase("group.yaml", ("group.exclusive_ownership", "group.assignment_conforms"),
                                 "held by"),
    "generation_reuse": BugCase("group.yaml", ("group.generation_monotonic", "group.exclusive_ownership"),
                                "assigned again in generation 1"),
    "keep_dead_in_isr": BugCase("broker-loss.yaml", ("partition.offline_replica_leaves_isr",),
                                "is still in the ISR"),
    "unclean_election": BugCase("unclean.yaml", ("partition.unclean_only_when_enabled",
                                                 "partition.election_conforms"), "unclean election of broker"),
    "shutdown_without_moving_leaders": BugCase("broker-loss.yaml", ("partition.controlled_shutdown_moves_leaders",),
                                               "still led it when its registration vanished"),
    "reassign_ignores_isr": BugCase("reassign.yaml", ("partition.leader_in_isr", "partition.election_conforms"),
                                    "not in ISR"),
    "preferred_outside_isr": BugCase("reassign.yaml", ("partition.leader_in_isr", "partition.election_conforms"),
                                     "not in ISR"),
}
CLEAN_EXPERIMENTS = sorted({c.experiment for c in BUG_CASES.values()})


@pytest.fixture(scope="module")
def reference_backend() -> ProcessBackend:
    """The process backend with reference brokers (bug flags exist only there), or a skip with the reason."""
    return reference_process_backend()


class BugRuns:
    """Runs and verifies bug experiments, once per (experiment, flags) per module: tests that ask for the
    same run share it."""

    def __init__(self, backend: ProcessBackend, runs_dir: Path, spark: Any) -> None:
        self.backend = backend
        self.runs_dir = runs_dir
        self.spark = spark
        self._done: dict[tuple[str, tuple[str, ...]], tuple[RunResult, Any]] = {}

    def get(self, experiment: str, flags: tuple[str, ...]) -> tuple[RunResult, Any]:
        key = (experiment, flags)
        if key not in self._done:
            self._done[key] = self._run(experiment, flags)
        return self._done[key]

    def _run(self, experiment: str, flags: tuple[str, ...]) -> tuple[RunResult, Any]:
        from spark_analysis.verify import verify_run

        exp = load_experiment(EXPERIMENTS / experiment)
        exp = dataclasses.replace(exp, cluster=dataclasses.replace(exp.cluster, reference_bugs=flags))
        t0 = time.monotonic()
        result = run_experiment(exp, self.backend, runs_dir=self.runs_dir,
                                backend_reason="bug-flag test: process backend with reference brokers")
        t1 = time.monotonic()
        verdict = verify_run(result.run_dir, spark=self.spark)
        print(f"\n{experiment} flags={list(flags) or 'none'}: run {result.status} in {t1 - t0:.1f}s, "
              f"verify {time.monotonic() - t1:.1f}s, verdict {verdict.status} ({result.run_dir})")
        for check in verdict.checks:
            if check.status != "pass":
                print(f"  {check.status:<8} {check.check_id:<34} {check.summary}")
        return result, verdict


@pytest.fixture(scope="module")
def bug_runs(reference_backend: ProcessBackend, tmp_path_factory: pytest.TempPathFactory, spark: Any) -> BugRuns:
    return BugRuns(reference_backend, tmp_path_factory.mktemp("bug-runs"), spark)


def _checks(verdict: Any) -> dict[str, Any]:
    return {c.check_id: c for c in verdict.checks}


def test_every_reference_bug_flag_has_a_case() -> None:
    assert set(BUG_CASES) == set(REFERENCE_BUGS)
    assert all((EXPERIMENTS / c.experiment).is_file() for c in BUG_CASES.values())


@pytest.mark.timeout(240)
@pytest.mark.parametrize("experiment", CLEAN_EXPERIMENTS)
def test_bug_experiment_passes_without_bug_flags(experiment: str, bug_runs: BugRuns) -> None:
    """The honest reference broker passes every selected check of the experiment."""
    result, verdict = bug_runs.get(experiment, ())
    assert result.status == "completed", result.error
    not_passed = {c.check_id: c.summary for c in verdict.checks if c.status != "pass" and not c.allowed}
    assert verdict.status == "pass", not_passed


def _xfail(reason: str | None) -> list[Any]:
    return [pytest.mark.xfail(strict=True, reason=reason)] if reason else []


@pytest.mark.timeout(240)
@pytest.mark.parametrize("flag", [pytest.param(f, marks=_xfail(c.xfail), id=f) for f, c in BUG_CASES.items()])
def test_bug_flag_is_caught_by_its_owning_check(flag: str, bug_runs: BugRuns) -> None:
    """With the flag set the verdict fails, every owning check fails, and the first one's summary names
    what went wrong, with evidence rows."""
    case = BUG_CASES[flag]
    result, verdict = bug_runs.get(case.experiment, (flag,))
    assert result.status == "completed", result.error
    checks = _checks(verdict)
    statuses = {owner: checks[owner].status for owner in case.owners}
    assert statuses == dict.fromkeys(case.owners, "fail"), {o: checks[o].summary for o in case.owners}
    first = checks[case.owners[0]]
    assert case.names in first.summary, first.summary
    assert first.evidence, f"{first.check_id} failed without evidence rows"
    assert verdict.status == "fail"


def _broker_log_lines(run_dir: Path, needle: str) -> list[str]:
    return [line for log in sorted((run_dir / "cluster").glob("broker-*/broker.log"))
            for line in log.read_text(errors="replace").splitlines() if needle in line]


@pytest.mark.timeout(240)
def test_controller_experiment_makes_a_resumed_old_controller_send_stale_epoch_requests(bug_runs: BugRuns) -> None:
    """The zombie is really provoked (what controller.epoch_monotonic's stale-view rule catches): after SIGCONT the old
    controller sends UpdateMetadata with its old epoch; honest brokers reject it, with zombie_controller they
    obey it (broker logs; same runs as the other tests)."""
    clean, _ = bug_runs.get("controller.yaml", ())
    bugged, _ = bug_runs.get("controller.yaml", ("zombie_controller",))
    assert _broker_log_lines(clean.run_dir, "STALE_CONTROLLER_EPOCH")
    assert not _broker_log_lines(clean.run_dir, "[bug zombie_controller]")
    obeyed = _broker_log_lines(bugged.run_dir, "with stale epoch")
    print(f"\n{len(obeyed)} stale-epoch requests obeyed, first: {obeyed[0] if obeyed else None}")
    assert obeyed and all("[bug zombie_controller]" in line for line in obeyed)
