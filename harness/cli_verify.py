"""What `kafka-chaos verify` (and `run`, after its run) prints: the checks' lines, the notes above the verdict
(damaged history, an incomplete run, the expectation), the verdict line; and the CLI's exit codes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harness.errors import HarnessError

EXIT_PASS, EXIT_FAIL, EXIT_ERROR = 0, 1, 2


def err(text: str) -> None:
    print(text, file=sys.stderr)


def verify_and_print(run_dir: Path, spark_master: str | None, out: Path | None = None) -> int:
    """Verify `run_dir`, print the verdict, and return the exit code (0 pass, 1 fail or unknown, 2 error)."""
    try:
        from spark_analysis.verify import output_dir, verify_run
    except ImportError as exc:
        err(f"error: the Spark verifiers are not available: {exc}")
        return EXIT_ERROR
    target = output_dir(run_dir, out)
    if target != run_dir:
        why = "as asked (--out)" if out is not None else f"{run_dir} is read-only"
        print(f"verdict, report.html and junit.xml go to {target} ({why})")
    from harness.cli_progress import VerifyProgress

    try:
        with VerifyProgress() as progress:
            verdict = verify_run(run_dir, spark_master=spark_master, out=out, progress=progress)
    except HarnessError as exc:
        err(f"error: verification of {run_dir} failed: {exc}")
        return EXIT_ERROR
    except OSError as exc:
        err(f"error: verification of {run_dir} could not write its results to {target}: {exc}; hint: --out DIR")
        return EXIT_ERROR
    for check in verdict.checks:
        note = " (allowed)" if check.allowed else ""
        if check.expected:
            note += " (expected: a known failure)" if check.status == "fail" else " (EXPECTED TO FAIL)"
        print(f"  {check.status:<8} {check.check_id:<34} {check.summary}{note}")
    for line in verdict_notes(verdict):
        print(line)
    print(f"verdict: {verdict.status}  report: {target / 'report.html'}")
    return EXIT_PASS if verdict.status == "pass" else EXIT_FAIL


def verdict_notes(verdict: Any) -> list[str]:
    """What `verify` (and `run`) print above the verdict line: the history lines skipped as
    damaged, and why a run that did not complete cannot pass."""
    from spark_analysis.verdict import damage_note, expectation_note

    lines = []
    note = damage_note(verdict.history)
    if note:
        lines.append(f"damaged history: {note}")
    incomplete = verdict.incomplete or {}
    if incomplete:
        lines.append(f"incomplete run ({incomplete.get('status')}), cannot pass: {incomplete.get('reason')}")
    expected = expectation_note(verdict.expectation)
    if expected:
        lines.append(expected)
    return lines
