"""The driver JVM's class-data-sharing archive (`spark_analysis.session.jvm_archive`): only a whole archive that a JVM
maps is put in place and used; a truncated one (which would crash every JVM mapping it with SIGBUS) or one
whose size is not the recorded one is not. The archives here are real but tiny: what `java -version` loads."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from spark_analysis.session import jvm_archive
from spark_analysis.session.jvm_archive import archive_options, archive_path, install_archive, java_home, usable_archive
from spark_analysis.session.spark_session import session_config

pytestmark = [pytest.mark.integration, pytest.mark.spark]

OPTIONS = ["-Dexample=1"]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache").mkdir()
    return tmp_path / "cache"


def _tiny_archive(path: Path) -> Path:
    home = java_home()
    if home is None:
        pytest.skip("no Java runtime (JAVA_HOME or java on PATH)")
    subprocess.run([str(home / "bin" / "java"), f"-XX:ArchiveClassesAtExit={path}", jvm_archive.QUIET, "-version"],
                   check=True, capture_output=True, timeout=120)
    return path


def test_a_whole_archive_is_installed_and_its_options_map_it(cache: Path) -> None:
    written = _tiny_archive(cache / "w.tmp")
    installed = install_archive(written, OPTIONS)
    assert installed == archive_path(OPTIONS) and installed.is_file()
    assert not written.exists()
    assert usable_archive(OPTIONS) == installed
    assert archive_options(OPTIONS) == [f"-XX:SharedArchiveFile={installed}", jvm_archive.QUIET]
    assert archive_options(["-Dother=1"]) == []  # other driver options: another archive, not built


def test_a_truncated_archive_is_refused_and_removed(cache: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The crashing check JVM leaves no crash log behind (it would land in the working directory)."""
    whole = _tiny_archive(cache / "whole.tmp")
    cut = cache / "cut.tmp"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 3])
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    monkeypatch.chdir(workdir)
    with pytest.raises(RuntimeError, match="exited"):
        install_archive(cut, OPTIONS)
    assert not cut.exists()
    assert usable_archive(OPTIONS) is None and archive_options(OPTIONS) == []
    assert not list(workdir.iterdir()) and not list(cache.glob("*hs_err*"))


def test_an_archive_whose_size_is_not_the_recorded_one_is_not_used(cache: Path) -> None:
    installed = install_archive(_tiny_archive(cache / "w.tmp"), OPTIONS)
    installed.chmod(0o644)
    with open(installed, "r+b") as fh:
        fh.truncate(installed.stat().st_size // 2)
    assert usable_archive(OPTIONS) is None and archive_options(OPTIONS) == []


def test_the_session_maps_the_archive_only_when_one_is_built(cache: Path) -> None:
    """No archive: the driver's options are its own; a build passes its own options instead."""
    assert "SharedArchiveFile" not in session_config("local[2]")["spark.driver.extraJavaOptions"]
    built = session_config("local[2]", ["-XX:ArchiveClassesAtExit=/x"])["spark.driver.extraJavaOptions"]
    assert "-XX:ArchiveClassesAtExit=/x" in built.split()


def test_the_environments_driver_options_come_after_every_other(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """KAFKA_CHAOS_SPARK_JAVA_OPTIONS (whitespace separated) ends the driver's options, so a flag there wins."""
    monkeypatch.setenv("KAFKA_CHAOS_SPARK_JAVA_OPTIONS", " -XX:TieredStopAtLevel=1  -Dx=1 ")
    options = session_config("local[2]", ["-XX:ArchiveClassesAtExit=/x"])["spark.driver.extraJavaOptions"].split()
    assert options[-3:] == ["-XX:ArchiveClassesAtExit=/x", "-XX:TieredStopAtLevel=1", "-Dx=1"]
    assert "spark.executor.extraJavaOptions" not in session_config("local[2]")  # embedded: the driver is it
    remote = session_config("spark://127.0.0.1:7077")["spark.executor.extraJavaOptions"]
    assert remote == "-XX:TieredStopAtLevel=1 -Dx=1"
    monkeypatch.delenv("KAFKA_CHAOS_SPARK_JAVA_OPTIONS")
    assert session_config("local[2]", [])["spark.driver.extraJavaOptions"].split()[-1] != "-Dx=1"


def test_the_training_history_verifies_without_a_failed_or_crashed_check(spark: object, tmp_path: Path) -> None:
    """The build's built-in run takes the checks through their queries: none fails, none crashes."""
    from spark_analysis.verify import verify_run
    from spark_analysis.warmup import training_history

    verdict = verify_run(training_history(tmp_path / "run"), spark=spark, write=False)  # type: ignore[arg-type]
    assert not [(c.check_id, c.summary) for c in verdict.checks if c.status == "fail"]
    assert not [c.check_id for c in verdict.checks if "crashed" in c.summary]
