"""The kafka-chaos pytest plugin (registered through the `pytest11` entry point).

`pytest experiments/` collects every experiment YAML as a test item (one per `matrix:` variant),
runs it on the chosen backend, verifies it with the Spark verifiers and fails with the failed
checks, their summaries, the first evidence rows, the report path and the reproduce line. JUnit
XML (`--junitxml`) carries seed, backend, run dir and each check's status as properties.

Options: `--chaos-backend`, `--chaos-seed`, `--chaos-runs-dir`, `--spark-master`; ini
`chaos_experiments` (globs of experiment files, rootdir-relative). Markers: `chaos` (every
experiment item), `chaos_cluster(**spec)` (the cluster shape of a module's `chaos_cluster`: the `cluster:` keys of an
experiment, read by the same rules, or `experiment=PATH`). Fixtures for Python
tests: `chaos_session`, `chaos_cluster` (one cluster reused across a module) and `run_experiment`
(runs an experiment file, YAML text or `Experiment` and returns its verdict).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from harness.errors import HarnessError, ValidationError
from harness.testing.items import SESSION_KEY, ExperimentFile, is_experiment_file
from harness.testing.session import ChaosOptions, ChaosSession, Outcome, parse_seeds

if TYPE_CHECKING:
    from harness.cluster.base import ClusterSpec
    from harness.experiment.schema import Experiment
    from harness.testing.shared import SharedCluster
    from spark_analysis.verdict import Verdict

DEFAULT_GLOBS = ["experiments/*.yaml", "experiments/*.yml", "experiments/**/*.yaml", "experiments/**/*.yml"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kafka-chaos", "kafka-chaos experiments")
    group.addoption("--chaos-backend", default="auto", choices=("auto", "containers", "process"),
                    help="cluster backend for experiments (default: auto: containers where a Docker API answers)")
    group.addoption("--chaos-seed", type=parse_seeds, default=None,
                    help="override every experiment's seed; a comma list (1,2,3) runs each experiment once per "
                         "seed in this one session (one Spark session verifies them all)")
    group.addoption("--chaos-runs-dir", default="runs", help="where run directories go (default: runs)")
    group.addoption("--spark-master", default=None, help="Spark master for the verifiers (default: local[*])")
    parser.addini("chaos_experiments", "globs (rootdir-relative) of experiment files to collect",
                  type="linelist", default=DEFAULT_GLOBS)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "chaos: a kafka-chaos experiment run (cluster, faults, Spark verdict)")
    config.addinivalue_line("markers", "chaos_cluster(**spec): cluster shape for the module's chaos_cluster "
                                       "(an experiment's cluster: keys, e.g. brokers, kafka, mode, broker_config; "
                                       "or experiment=PATH)")
    options = ChaosOptions(
        backend=config.getoption("chaos_backend"),
        seeds=config.getoption("chaos_seed") or (),
        runs_dir=Path(config.getoption("chaos_runs_dir")).absolute(),
        spark_master=config.getoption("spark_master"),
    )
    config.stash[SESSION_KEY] = ChaosSession(options)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    named = parent.session.isinitpath(file_path)
    if is_experiment_file(file_path, parent.config, named):
        return ExperimentFile.from_parent(parent, path=file_path)
    return None


def pytest_report_header(config: pytest.Config) -> str | None:
    options = config.stash[SESSION_KEY].options
    seed = ", ".join(map(str, options.seeds)) or "from each experiment"
    plural = "s" if len(options.seeds) > 1 else ""
    return f"kafka-chaos: backend {options.backend}, seed{plural} {seed}, runs in {options.runs_dir}"


@pytest.fixture(scope="session")
def chaos_session(pytestconfig: pytest.Config) -> ChaosSession:
    """The session's options and backend (what `--chaos-*` chose)."""
    return pytestconfig.stash[SESSION_KEY]


@pytest.fixture(scope="module")
def chaos_cluster(request: pytest.FixtureRequest, chaos_session: ChaosSession,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedCluster]:
    """One cluster for every `run_experiment` of a module (shape from the module's `chaos_cluster` marker)."""
    from harness.testing.shared import SharedCluster

    spec = _cluster_spec(request.node.get_closest_marker("chaos_cluster"), request.node.path)
    from harness.cluster.select import prefers_process, process_only

    backend, reason = chaos_session.backend(process_only(spec), prefers_process(spec))
    with SharedCluster(backend, reason, spec, tmp_path_factory.mktemp("chaos-cluster")) as shared:
        yield shared


def _cluster_spec(marker: pytest.Mark | None, module: Path) -> ClusterSpec:
    """The marker's spec: an experiment's cluster (`experiment=PATH`, `variant=`), or its keywords read as the
    `cluster:` keys by the experiment loader's rules (`harness.experiment.cluster_fields.read_marker`)."""
    from harness.engine.backend_needs import cluster_spec
    from harness.experiment import load_experiment
    from harness.experiment.cluster_fields import read_marker

    kwargs = dict(marker.kwargs) if marker else {}
    if "experiment" in kwargs:
        return cluster_spec(load_experiment(kwargs.pop("experiment"), kwargs.pop("variant", None)))
    try:
        return read_marker(kwargs, module)
    except ValidationError as exc:
        raise pytest.UsageError(str(exc)) from exc


class ExperimentRunner:
    """`run_experiment(source, seed=None, variant=None)` -> the verdict; `outcomes` keeps every run."""

    def __init__(self, session: ChaosSession, node: pytest.Item, shared: SharedCluster | None) -> None:
        self.session, self.node, self.shared = session, node, shared
        self.outcomes: list[Outcome] = []

    def __call__(self, source: str | Path | Experiment, *, seed: int | None = None,
                 variant: str | None = None) -> Verdict:
        exp = self.session.prepare(_experiment(source, variant))
        if seed is not None:
            exp = dataclasses.replace(exp, seed=seed)
        outcome = self.session.run(exp, backend=self.shared.lending() if self.shared else None)
        self.outcomes.append(outcome)
        prefix = f"run{len(self.outcomes)}." if len(self.outcomes) > 1 else ""
        self.node.user_properties.extend((prefix + k, v) for k, v in outcome.properties())
        if outcome.verdict is None:
            raise HarnessError(outcome.describe_failure())
        if outcome.status != outcome.verdict.status:
            return dataclasses.replace(outcome.verdict, status=outcome.status)  # type: ignore[arg-type]
        return outcome.verdict

    def explain(self) -> str:
        """The last run's failure report (failed checks, evidence, report path, reproduce line)."""
        return self.outcomes[-1].describe_failure() if self.outcomes else "no experiment was run"


def _experiment(source: str | Path | Experiment, variant: str | None) -> Experiment:
    from harness.experiment import load_experiment, load_experiment_text
    from harness.experiment.schema import Experiment

    if isinstance(source, Experiment):
        return source
    if isinstance(source, str) and "\n" in source:
        return load_experiment_text(source, "<run_experiment text>", variant)
    return load_experiment(source, variant)


@pytest.fixture
def run_experiment(request: pytest.FixtureRequest, chaos_session: ChaosSession) -> Callable[..., Verdict]:
    """Run an experiment (path, YAML text or `Experiment`) and return its verdict; uses `chaos_cluster`
    when the test also asks for it."""
    shared = request.getfixturevalue("chaos_cluster") if "chaos_cluster" in request.fixturenames else None
    node = request.node
    assert isinstance(node, pytest.Item)
    return ExperimentRunner(chaos_session, node, shared)
