"""The CI recipes of docs/ci/ (issue 42): the GitHub Actions workflow passes `actionlint` (rhysd/actionlint, which
`make test` installs with `go install`; a broken copy must fail it, so the linter is known to be looking), and the
GitLab CI file has the structure GitLab reads (its published schema is not served here). Both run `make nightly`,
keep `runs/nightly` as artefacts whatever the outcome, and publish the JUnit files `harness.nightly` writes."""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
GITHUB = ROOT / "docs" / "ci" / "github-actions.yml"
GITLAB = ROOT / "docs" / "ci" / "gitlab-ci.yml"
JUNIT_NAME = "runs/nightly/2026-11-29/junit-seed-1-2-3-4-5.xml"
"""A JUnit file as `harness.nightly` names it (`<out>/<night>/junit-seed-<seeds>.xml`)."""


def _actionlint() -> str | None:
    found = shutil.which("actionlint")
    gobin = Path(os.environ.get("GOBIN") or Path.home() / "go" / "bin") / "actionlint"
    return found or (str(gobin) if gobin.is_file() else None)


def test_the_github_workflow_passes_actionlint_and_a_broken_copy_does_not(tmp_path: Path) -> None:
    linter = _actionlint()
    if linter is None:
        pytest.skip("actionlint is not installed (make actionlint: go install github.com/rhysd/actionlint)")
    done = subprocess.run([linter, str(GITHUB)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    broken = tmp_path / "broken.yml"
    broken.write_text(GITHUB.read_text().replace("runs-on: ubuntu-latest",
                                                 "runs-on: ubuntu-latest\n    needs: nothing"))  # no such job
    assert subprocess.run([linter, str(broken)], capture_output=True, timeout=60, check=False).returncode == 1


def test_the_github_workflow_runs_the_nightly_keeps_runs_and_publishes_junit() -> None:
    doc = yaml.safe_load(GITHUB.read_text())
    steps = doc["jobs"]["chaos"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    assert any(r.startswith("make nightly") for r in runs), runs
    kept = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert kept and kept[0]["if"] == "always()" and kept[0]["with"]["path"] == "runs/nightly"
    junit = [s for s in steps if "junit" in str(s.get("uses", ""))]
    assert junit and fnmatch.fnmatch(JUNIT_NAME, junit[0]["with"]["report_paths"])


def test_the_gitlab_file_has_a_stage_job_that_runs_the_nightly_keeps_runs_and_publishes_junit() -> None:
    doc = yaml.safe_load(GITLAB.read_text())
    jobs = {k: v for k, v in doc.items() if isinstance(v, dict) and "script" in v}
    (job,) = jobs.values()
    assert job["stage"] in doc["stages"]
    assert any(str(line).startswith("make nightly") for line in job["script"])
    artifacts = job["artifacts"]
    assert artifacts["when"] == "always" and "runs/nightly/" in artifacts["paths"]
    assert fnmatch.fnmatch(JUNIT_NAME, artifacts["reports"]["junit"])
    assert set(job) <= {"stage", "image", "timeout", "rules", "variables", "cache", "before_script", "script",
                        "artifacts", "tags", "services"}, set(job)  # keys GitLab knows for a job
