"""`kafka-chaos init` (`harness.scaffold`, issue 42): the starter project it writes loads, validates against the schema
it writes beside it, and a bare `pytest` there collects exactly the starter experiment through the plugin's entry
point (no conftest.py); the Makefile fragment runs the commands `harness.nightly` accepts, the workflow passes
actionlint; init refuses to overwrite anything (writing nothing) unless forced. The run itself is nightly:
tests/nightly/test_init_then_pytest_runs_a_first_experiment.py."""

from __future__ import annotations

import fnmatch
import functools
import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

from harness import scaffold
from harness.cli import main
from harness.errors import ConfigError
from harness.experiment import json_schema as json_schema_module
from harness.experiment import load_experiments
from harness.nightly import build_parser as nightly_parser
from tests.unit.test_ci_recipes import GITHUB, JUNIT_NAME, _actionlint

EXPECTED = [".github/workflows/kafka-chaos-nightly.yml", "KAFKA-CHAOS.md", "experiment.schema.json",
            "experiments/first-experiment.yaml", "kafka-chaos.mk", "pytest.ini"]
MODELINE = "# yaml-language-server: $schema="


@functools.cache
def _schema_text() -> str:
    return json_schema_module.schema_text()


@pytest.fixture
def quick_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """The generated schema text computed once for the module (generating it takes a second or more)."""
    monkeypatch.setattr(json_schema_module, "schema_text", _schema_text)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    directory = tmp_path_factory.mktemp("starter") / "project"
    return directory, scaffold.init(directory)


def _files(directory: Path) -> list[str]:
    return sorted(p.relative_to(directory).as_posix() for p in directory.rglob("*") if p.is_file())


def test_init_creates_the_directory_and_writes_every_starter_file(project: tuple[Path, list[Path]]) -> None:
    directory, written = project
    assert _files(directory) == EXPECTED
    assert written == [directory / rel for rel in scaffold.FILES]
    assert not (directory / "conftest.py").exists()


def test_the_starter_experiment_loads_and_is_the_short_controller_kill_the_issue_asks_for(
        project: tuple[Path, list[Path]]) -> None:
    (exp,) = load_experiments(project[0] / scaffold.EXPERIMENT)
    assert (exp.name, exp.cluster.brokers, exp.cluster.mode) == ("first-experiment", 3, "zookeeper")
    assert len(exp.topics) == 1 and exp.duration <= 30
    (producer,) = exp.workload.producers
    assert producer.acks == "all" and producer.idempotence
    assert len(exp.workload.consumers) == 1
    (fault,) = exp.schedule
    assert fault.kind == "kill" and fault.target is not None and fault.target.kind == "controller" and fault.duration
    assert exp.verify.slo.controller_failover == 15


def test_the_starter_experiment_names_the_schema_written_beside_it_and_validates_against_it(
        project: tuple[Path, list[Path]]) -> None:
    directory = project[0]
    path = directory / scaffold.EXPERIMENT
    first = path.read_text().splitlines()[0]
    assert first.startswith(MODELINE)
    schema_file = (path.parent / first[len(MODELINE):]).resolve()
    assert schema_file == (directory / scaffold.SCHEMA).resolve() and schema_file.is_file()
    assert schema_file.read_text() == _schema_text(), "the schema `kafka-chaos schema` prints"
    validator = Draft202012Validator(json.loads(schema_file.read_text()))
    errors = list(validator.iter_errors(yaml.safe_load(path.read_text())))
    assert not errors, [e.message for e in errors]


def test_bare_pytest_in_the_project_collects_exactly_the_starter_experiment_through_the_entry_point(
        project: tuple[Path, list[Path]]) -> None:
    directory = project[0]
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"],
                          cwd=directory, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line for line in done.stdout.splitlines() if "::" in line] == [
        "experiments/first-experiment.yaml::first-experiment"], done.stdout
    assert "warnings" not in done.stdout, done.stdout
    assert not (directory / "conftest.py").exists()


def test_the_makefile_fragment_runs_pytest_and_a_nightly_that_harness_nightly_accepts(
        project: tuple[Path, list[Path]]) -> None:
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(["make", "-n", "-s", "-f", str(scaffold.MAKEFILE), "chaos", "chaos-nightly", "chaos-trend",
                           "CHAOS_PYTHON=py"], cwd=project[0], capture_output=True, text=True, timeout=30, check=True)
    chaos, nightly, trend = [shlex.split(c) for c in done.stdout.replace("\\\n", " ").splitlines()]
    assert chaos[:3] == ["py", "-m", "pytest"] and "experiments/" in chaos
    assert nightly[:3] == ["py", "-m", "harness.nightly"]
    args = nightly_parser().parse_args(nightly[3:])
    assert (args.experiments, args.seeds, args.out, args.long_tests) == (["experiments/"], [1, 2, 3], "runs/nightly",
                                                                         False)
    assert trend == ["py", "-m", "harness.cli", "report", "--trend", "runs/nightly"]


def test_the_workflow_runs_the_nightly_target_keeps_runs_publishes_junit_and_passes_actionlint(
        project: tuple[Path, list[Path]]) -> None:
    workflow = project[0] / scaffold.WORKFLOW
    steps = yaml.safe_load(workflow.read_text())["jobs"]["chaos"]["steps"]
    runs = [s["run"] for s in steps if "run" in s]
    assert any(r.startswith("make -f kafka-chaos.mk chaos-nightly") for r in runs), runs
    assert any("pip install kafka-chaos pytest" in r for r in runs), runs
    kept = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert kept and kept[0]["if"] == "always()" and kept[0]["with"]["path"] == "runs/nightly"
    junit = [s for s in steps if "junit" in str(s.get("uses", ""))]
    assert junit and fnmatch.fnmatch(JUNIT_NAME, junit[0]["with"]["report_paths"])
    assert workflow.read_text() != GITHUB.read_text()  # adapted, so linted here too
    linter = _actionlint()
    if linter is None:
        pytest.skip("actionlint is not installed (make actionlint: go install github.com/rhysd/actionlint)")
    done = subprocess.run([linter, str(workflow)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_readme_names_every_file_written_and_how_to_run_them(project: tuple[Path, list[Path]]) -> None:
    text = (project[0] / scaffold.README).read_text()
    for rel in scaffold.FILES:
        if rel != scaffold.README:
            assert f"`{rel.as_posix()}`" in text, rel
    for command in ("pytest", "make -f kafka-chaos.mk chaos", "kafka-chaos faults", "kafka-chaos validate", "runs/"):
        assert command in text, command


def test_init_refuses_to_overwrite_naming_the_files_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "experiments").mkdir()
    (tmp_path / "experiments" / "first-experiment.yaml").write_text("mine\n")
    with pytest.raises(ConfigError, match="wrote nothing") as caught:
        scaffold.init(tmp_path)
    assert "pytest.ini" in str(caught.value) and "first-experiment.yaml" in str(caught.value)
    assert "--force" in str(caught.value)
    assert _files(tmp_path) == ["experiments/first-experiment.yaml", "pytest.ini"]
    assert (tmp_path / "pytest.ini").read_text() == "[pytest]\n"


@pytest.mark.parametrize(("name", "text", "named"), [
    ("pyproject.toml", "[project]\nname = 'x'\n[tool.pytest.ini_options]\ntestpaths = ['tests']\n",
     "[tool.pytest.ini_options]"),
    ("setup.cfg", "[metadata]\nname = x\n[tool:pytest]\ntestpaths = tests\n", "[tool:pytest]"),
    ("tox.ini", "[tox]\nenvlist = py311\n[pytest]\ntestpaths = tests\n", "[pytest]"),
])
def test_init_refuses_to_shadow_an_existing_pytest_configuration(tmp_path: Path, name: str, text: str,
                                                                  named: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(ConfigError, match="configures pytest") as caught:
        scaffold.init(tmp_path)
    assert f"{name} {named}" in str(caught.value)
    assert _files(tmp_path) == [name]


def test_a_project_without_pytest_configuration_is_not_refused(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'x'\n[tool.ruff]\nline-length = 100\n")
    (tmp_path / "setup.cfg").write_text("[metadata]\nname = x\n")
    assert scaffold.shadowed_pytest_config(tmp_path) is None


def test_force_overwrites_existing_files(tmp_path: Path, quick_schema: None) -> None:
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    written = scaffold.init(tmp_path, force=True)
    assert len(written) == len(scaffold.FILES)
    assert "chaos_experiments" in (tmp_path / "pytest.ini").read_text()


def test_a_directory_where_a_file_goes_is_refused_even_with_force(tmp_path: Path) -> None:
    (tmp_path / "pytest.ini").mkdir()
    with pytest.raises(ConfigError, match="not a regular file"):
        scaffold.init(tmp_path, force=True)
    assert _files(tmp_path) == []


def test_the_cli_prints_the_files_and_the_next_step_and_exits_two_when_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], quick_schema: None) -> None:
    target = tmp_path / "chaos"
    assert main(["init", str(target)]) == 0
    out = capsys.readouterr().out
    for rel in EXPECTED:
        assert f"  {rel}\n" in out, rel
    assert f"next: cd {target} && pytest\n" in out
    assert main(["init", str(target)]) == 2
    err = capsys.readouterr().err
    assert "error: kafka-chaos init wrote nothing: 6 file(s) exist already" in err and "--force" in err
    assert main(["init", str(target), "--force"]) == 0


def test_the_cli_in_the_current_directory_says_just_pytest(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        quick_schema: None) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    assert "\nnext: pytest\n" in capsys.readouterr().out
    assert _files(tmp_path) == EXPECTED
