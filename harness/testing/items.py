"""Experiment YAML files as pytest items: one item per experiment (per `matrix:` variant, per `--chaos-seed` seed).

Owns collection (which YAML files are experiments: those under the `chaos_experiments` globs, or
named on the command line), items named `name`, `name[variant]` or, with several seeds, `name[seed=N]` /
`name[variant,seed=N]`, their markers, the run through
`ChaosSession`, JUnit properties, and the failure report pytest prints.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from harness.errors import HarnessError, ValidationError
from harness.testing.session import ChaosSession, Outcome

if TYPE_CHECKING:
    from harness.experiment.schema import Experiment

SESSION_KEY = pytest.StashKey[ChaosSession]()
YAML_SUFFIXES = (".yaml", ".yml")


def is_experiment_file(path: Path, config: pytest.Config, named: bool) -> bool:
    """Collect `path`: a YAML file named on the command line, or matching an ini glob (rootdir-relative)."""
    if path.suffix not in YAML_SUFFIXES:
        return False
    if named:
        return True
    try:
        rel = path.resolve().relative_to(config.rootpath.resolve()).as_posix()
    except ValueError:
        return False
    return any(fnmatch.fnmatch(rel, pattern) for pattern in config.getini("chaos_experiments"))


class ExperimentFailed(Exception):
    """The verdict was fail or unknown; carries the outcome for the failure report."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome.describe_failure())
        self.outcome = outcome


class ExpectedFailure(Exception):
    """Every check the experiment's `expect:` names failed, and nothing else did: the item is xfailed (strict)."""


class ExperimentFile(pytest.File):
    """One experiment file; a validation error is a collection error naming file, line and field."""

    def collect(self) -> Iterator[pytest.Item]:
        from harness.experiment import load_experiments

        try:
            exps = load_experiments(self.path)
        except ValidationError as exc:
            raise self.CollectError(f"invalid experiment {self.path}:\n{exc}") from exc
        session = self.config.stash[SESSION_KEY]
        for exp in exps:
            runs = session.seeded(exp)
            for run in runs:
                name = exp.label if len(runs) == 1 else with_seed(exp.label, run.seed)
                yield ExperimentItem.from_parent(self, name=name, exp=run)


def with_seed(label: str, seed: int) -> str:
    """An item's name when several seeds run: `name[seed=2]`, `name[variant,seed=2]`."""
    if label.endswith("]"):
        return f"{label[:-1]},seed={seed}]"
    return f"{label}[seed={seed}]"


class ExperimentItem(pytest.Item):
    """Runs one experiment on the session's backend, verifies it, and fails unless the verdict passes."""

    def __init__(self, *, exp: Experiment, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.exp = exp
        self.add_marker(pytest.mark.chaos)
        expect = exp.verify.expect
        if expect.fail:
            why = f"expected to fail {', '.join(expect.fail)}" + (f": {expect.why}" if expect.why else "")
            self.add_marker(pytest.mark.xfail(reason=why, strict=True, raises=ExpectedFailure))

    def runtest(self) -> None:
        session = self.config.stash[SESSION_KEY]
        exp = self.exp
        self.user_properties.append(("seed", str(exp.seed)))
        try:
            outcome = session.run(exp)
        except HarnessError as exc:
            pytest.fail(f"experiment {exp.label} could not run: {exc}", pytrace=False)
        self.user_properties[:] = outcome.properties()
        if outcome.failed_checks() or (not outcome.passed and not outcome.unmet_expectations()):
            raise ExperimentFailed(outcome)
        if outcome.passed and exp.verify.expect.fail:
            raise ExpectedFailure(outcome.describe_expectation())
        # left: only expected failures that did not happen; returning makes the strict xfail an XPASS(strict)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, ExperimentFailed):
            return excinfo.value.outcome.describe_failure()
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"experiment {self.exp.label}"
