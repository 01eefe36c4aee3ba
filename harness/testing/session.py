"""`ChaosSession`: what every experiment run from one pytest session shares, and `Outcome`.

Owns the options (`--chaos-backend`, `--chaos-seed`, `--chaos-runs-dir`, `--spark-master`), the
backend chosen once, one run end to end (cluster run ->
Spark verdict), and the failure text: failed checks, their summaries, the first evidence rows,
the report path and the exact reproduce line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import HarnessError
from spark_analysis.verdict import counted_status, expectation_note

if TYPE_CHECKING:
    from harness.cluster.base import ClusterBackend
    from harness.experiment.schema import Experiment
    from spark_analysis.result import CheckResult
    from spark_analysis.verdict import Verdict

EVIDENCE_ROWS = 3


def parse_seeds(text: str) -> tuple[int, ...]:
    """`--chaos-seed`'s value: one seed or a comma list of them (`1,2,3`), in order, without repeats."""
    try:
        seeds = tuple(dict.fromkeys(int(part) for part in text.split(",")))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed or a comma list of seeds (e.g. 7 or 1,2,3)") from exc
    return seeds


@dataclass(frozen=True, slots=True)
class ChaosOptions:
    backend: str = "auto"
    seeds: tuple[int, ...] = ()
    """`--chaos-seed`: every experiment runs once per seed (none given: with its file's seed)."""
    runs_dir: Path = Path("runs")
    spark_master: str | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """One experiment run and its verdict (None when the run could not be verified)."""

    exp: Experiment
    backend: str
    run_dir: Path
    run_status: str
    verdict: Verdict | None
    error: str | None = None

    @property
    def status(self) -> str:
        """pass, fail or unknown: a run that did not complete or was not verified is never pass."""
        if self.verdict is None:
            return "unknown"
        if self.run_status != "completed" and self.verdict.status == "pass":
            return "unknown"
        return self.verdict.status

    @property
    def passed(self) -> bool:
        return self.status == "pass"

    def failed_checks(self) -> list[CheckResult]:
        """The checks that count as not passing and are not allowed (what makes the outcome fail), but for the
        expected failures that did not happen (`unmet_expectations`)."""
        if self.verdict is None:
            return []
        return [c for c in self.verdict.checks if counted_status(c) != "pass" and not c.allowed
                and not (c.expected and c.status == "pass")]

    def unmet_expectations(self) -> list[str]:
        """The checks `expect:` names that passed (or never ran) instead of failing."""
        got = (self.verdict.expectation or {}) if self.verdict is not None else {}
        return [*got.get("unmet", ()), *got.get("not_run", ())]

    def describe_expectation(self) -> str:
        return (expectation_note(self.verdict.expectation) if self.verdict is not None else None) or ""

    def properties(self) -> list[tuple[str, str]]:
        """JUnit properties: seed, backend, run dir, broker, variant, verdict and every check's status."""
        props = [("experiment", self.exp.name), ("seed", str(self.exp.seed)), ("backend", self.backend),
                 ("run_dir", str(self.run_dir)), ("run_status", self.run_status), ("verdict", self.status)]
        if self.exp.variant:
            props.append(("variant", self.exp.variant))
        if self.verdict is not None:
            props.append(("broker", self.verdict.title))
            props += [(f"check.{c.check_id}", c.status + (" (allowed)" if c.allowed else "")
                       + (" (expected)" if c.expected else "")) for c in self.verdict.checks]
        return props

    def reproduce(self) -> str:
        from harness.cli import reproduce_line

        return reproduce_line(self.exp, self.backend, self.run_dir)

    def describe_failure(self) -> str:
        """The readable failure: what failed, why, the first evidence, where the report is, how to rerun."""
        head = f"experiment {self.exp.label}: {self.status}"
        lines = [f"{head} (seed {self.exp.seed}, backend {self.backend}, run {self.run_status})"]
        if self.verdict is not None:
            lines.append(f"tested: {self.verdict.title}")
            for c in self.failed_checks():
                fault = f" [during {c.fault}]" if c.fault else ""
                lines.append(f"  {c.status.upper():<8}{c.check_id}: {c.summary}{fault}")
                lines += [f"      {json.dumps(dict(e), default=str, sort_keys=True)}" for e in
                          c.evidence[:EVIDENCE_ROWS]]
        if self.error:
            lines.append(f"error: {self.error}")
        report = self.run_dir / "report.html"
        lines.append(f"report: {report if report.is_file() else '(not written) ' + str(self.run_dir)}")
        lines.append(self.reproduce())
        return "\n".join(lines)


@dataclass(slots=True)
class ChaosSession:
    """Shared by every experiment of a pytest session; created at configure, closed at unconfigure."""

    options: ChaosOptions
    _backends: dict[str, tuple[ClusterBackend, str]] | None = None

    def backend(self, needs: str = "", prefer: str = "") -> tuple[ClusterBackend, str]:
        """The backend (chosen once, and once more when `needs` names what only the process backend runs:
        `needs_process_backend`, `select.process_only`, or `prefer` what `auto` runs there: `select.prefers_process`;
        raises `HarnessError` naming why none can run). Leftovers
        of dead harnesses are cleaned by the backend's own `up` and recorded in each run's run.json."""
        from harness.cluster.select import choose_backend

        if self._backends is None:
            self._backends = {}
        key = "process" if needs or (prefer and self.options.backend == "auto") else ""
        if key not in self._backends:
            self._backends[key] = choose_backend(self.options.backend, process_only=needs, prefer_process=prefer)
        return self._backends[key]

    def seeded(self, exp: Experiment) -> list[Experiment]:
        """The experiment once per `--chaos-seed` seed, or as its file has it when none was given."""
        return [dataclasses.replace(exp, seed=seed) for seed in self.options.seeds] or [exp]

    def prepare(self, exp: Experiment) -> Experiment:
        """The experiment as the `run_experiment` fixture runs it: `--chaos-seed`'s first seed overrides the
        file's seed."""
        return self.seeded(exp)[0]

    def run(self, exp: Experiment, *, backend: tuple[ClusterBackend, str] | None = None) -> Outcome:
        """Run `exp` (after `prepare`) and verify it; a harness error becomes an unknown outcome."""
        from harness.cluster.select import prefers_process
        from harness.engine.backend_needs import needs_process_backend
        from harness.engine.runner import run_experiment

        cluster_backend, reason = backend or self.backend(needs_process_backend(exp), prefers_process(exp.cluster))
        result = run_experiment(exp, cluster_backend, backend_reason=reason, runs_dir=self.options.runs_dir)
        verdict, error = None, result.error
        try:
            from spark_analysis.verify import verify_run

            verdict = verify_run(result.run_dir, spark_master=self.options.spark_master)
        except HarnessError as exc:
            error = "; ".join(filter(None, [error, f"verification failed: {exc}"]))
        return Outcome(exp, cluster_backend.name, result.run_dir, result.status, verdict, error)

