"""The known-bugs corpus report from verified run directories, without Spark: one row per bug and release, the
seeds that failed out of those run, the failing checks, the median time to the first failing evidence row; a run
never verified is counted and listed, never taken as passing."""

from __future__ import annotations

import json
from pathlib import Path

from spark_analysis.report.known_bugs import AFFECTED, FIXED, bug_rows, collect_bug_runs, write_corpus


def _run(root: Path, name: str, version: str, seed: int, expect: list[str], failing: dict[str, float] | None,
         status: str = "pass") -> Path:
    d = root / name
    d.mkdir()
    (d / "run.json").write_text(json.dumps({
        "experiment": "KAFKA-1", "seed": seed, "broker": {"flavour": "apache-kafka", "version": version},
        "verify": {"expect": {"fail": expect, "why": "KAFKA-1"}}}))
    if failing is not None:
        checks = [{"id": c, "status": "fail", "summary": "x", "evidence": [{"t": t - 1}, {"t": t, "problem": "p"}]}
                  for c, t in failing.items()] + [{"id": "controller.unique", "status": "pass", "summary": "ok"}]
        (d / "verdict.json").write_text(json.dumps({"status": status, "checks": checks, "run": {}}))
    return d


def test_rows_count_failing_seeds_per_release_with_the_time_to_the_first_problem(tmp_path: Path) -> None:
    dirs = [_run(tmp_path, "a1", "3.6.2", 1, ["quorum.leader_resigns"], {"quorum.leader_resigns": 20.0}),
            _run(tmp_path, "a2", "3.6.2", 2, ["quorum.leader_resigns"], {"quorum.leader_resigns": 30.0}),
            _run(tmp_path, "a3", "3.6.2", 3, ["quorum.leader_resigns"], {}, status="fail"),
            _run(tmp_path, "f1", "3.7.0", 1, [], {}), _run(tmp_path, "f2", "3.7.0", 2, [], None)]
    rows = {r.role: r for r in bug_rows(collect_bug_runs(dirs))}
    affected, fixed = rows[AFFECTED], rows[FIXED]
    assert (affected.release, affected.rate, affected.failed_seeds) == ("3.6.2", "2/3", (1, 2))
    assert affected.failing_checks == ("quorum.leader_resigns",) and affected.first_failure_s == 25.0
    assert (fixed.release, fixed.rate, fixed.unverified) == ("3.7.0", "0/2", 1)
    json_path, html_path = write_corpus(tmp_path / "out", list(rows.values()), 123.4, [1, 2, 3])
    doc = json.loads(json_path.read_text())
    assert doc["bugs"]["KAFKA-1"] == {"affected": ["2/3"], "fixed": ["0/2"]} and doc["wall_s"] == 123.4
    assert "goal ≥ 4/5" in html_path.read_text()


def test_a_client_bugs_rows_name_the_client_release_its_matrix_varies(tmp_path: Path) -> None:
    dirs = []
    for name, version, expect in (("a", "2.1.0", ["consumer.nonmonotonic_poll"]), ("f", "2.1.1", [])):
        d = _run(tmp_path, name, "3.9.2", 1, expect, {c: 30.0 for c in expect})
        info = json.loads((d / "run.json").read_text())
        info.update(variant=f"client_version={version}",
                    client={"name": "librdkafka", "library": "confluent-kafka", "version": version})
        (d / "run.json").write_text(json.dumps(info))
        dirs.append(d)
    rows = {r.role: r.release for r in bug_rows(collect_bug_runs(dirs))}
    assert rows == {AFFECTED: "librdkafka 2.1.0", FIXED: "librdkafka 2.1.1"}
