"""`kafka-chaos verify` of a read-only run directory (an archive mount, a colleague's share): it analysed, then
died on verdict.json.tmp with EROFS (issue 36). Now the Parquet conversion and the outputs go to `--out DIR`, or
to `<cache>/verified/<run>-<hash>/`, and the CLI says where. Needs root for the read-only bind mount (CI runs as
root; elsewhere the test skips and says so)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cli import main
from spark_analysis.verify import output_dir, verify_run
from tests.fixtures.recorded import recorded_runs

pytestmark = [pytest.mark.integration, pytest.mark.spark]


@contextlib.contextmanager
def read_only(source: Path, at: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("a read-only bind mount needs root (CI runs as root)")
    at.mkdir()
    subprocess.run(["mount", "--bind", str(source), str(at)], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(at)], check=True)
        yield at
    finally:
        subprocess.run(["umount", str(at)], check=False)


def test_a_read_only_run_directory_is_verified_into_the_cache_and_the_cli_says_where(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    run = recorded_runs()[0].unpack(tmp_path / "src")
    with read_only(run, tmp_path / "archive") as ro:
        with pytest.raises(OSError):
            (ro / "probe").write_text("x")
        target = output_dir(ro)
        assert target.parent == tmp_path / "cache" / "verified" and target.name.startswith("archive-")
        verdict = verify_run(ro, spark=spark)
        assert (target / "verdict.json").is_file() and (target / "report.html").is_file()
        assert json.loads((target / "verdict.json").read_text())["status"] == verdict.status
        assert not (ro / "verdict.json").exists() and "experiment.yaml" in (target / "report.html").read_text()
        out = tmp_path / "elsewhere"
        monkeypatch.setattr("spark_analysis.verify.get_session", lambda master=None: spark)
        code = main(["verify", str(ro), "--out", str(out)])
        printed = capsys.readouterr().out
        assert code in (0, 1) and f"go to {out} (as asked (--out))" in printed and (out / "junit.xml").is_file()
