"""One known bug of the corpus end to end (the rest is judged from recorded runs: tests/data/recorded/, and live in
`make known-bugs`): KAFKA-15489 on Apache Kafka 3.6.2, which it affects, and 3.7.0, which fixed it (KRaft, the
process backend, real librdkafka, Spark), through the pytest plugin as `make known-bugs` runs the corpus. The
affected release fails `quorum.leader_resigns` as the file's `expect:` says (a strict xfail), the fixed one passes,
and the corpus report counts 1/1 and 0/1."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.known_bugs import report
from spark_analysis.report.known_bugs import AFFECTED, FIXED

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow, pytest.mark.timeout(900)]
ROOT = Path(__file__).resolve().parents[3]
BUG = ROOT / "experiments/known-bugs/KAFKA-15489.yaml"


@dataclass(frozen=True, slots=True)
class Corpus:
    code: int
    output: str
    cases: dict[str, ET.Element]
    runs: Path


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    work = tmp_path_factory.mktemp("known-bugs")
    junit, runs = work / "junit.xml", work / "runs"
    args = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA", "--timeout", "600", str(BUG),
            "--chaos-backend", "process", "--chaos-runs-dir", str(runs), "--spark-master", "local[2]",
            f"--junitxml={junit}"]
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=880, check=False)
    print(proc.stdout[-6000:], proc.stderr[-3000:])
    cases = {c.get("name", ""): c for c in ET.parse(junit).iter("testcase")}
    return Corpus(proc.returncode, proc.stdout, cases, runs)


def test_the_affected_release_is_a_strict_xfail_and_the_fixed_one_passes(corpus: Corpus) -> None:
    assert corpus.code == 0, corpus.output[-4000:]
    affected, fixed = corpus.cases["KAFKA-15489[kafka=3.6.2]"], corpus.cases["KAFKA-15489[kafka=3.7.0]"]
    skipped = affected.find("skipped")
    assert skipped is not None and "xfail" in (skipped.get("type") or "") + (skipped.get("message") or ""), \
        ET.tostring(affected, encoding="unicode")
    assert fixed.find("failure") is None and fixed.find("error") is None and fixed.find("skipped") is None
    assert "1 passed, 1 xfailed" in corpus.output


def test_the_affected_run_fails_the_rule_the_fix_established_and_the_report_counts_both(corpus: Corpus) -> None:
    runs = sorted(p for p in corpus.runs.iterdir() if (p / "verdict.json").is_file())
    verdicts = {json.loads((p / "run.json").read_text())["broker"]["version"]: json.loads(
        (p / "verdict.json").read_text()) for p in runs}
    resign = {v: next(c for c in d["checks"] if c["id"] == "quorum.leader_resigns") for v, d in verdicts.items()}
    assert resign["3.6.2"]["status"] == "fail" and resign["3.6.2"]["expected"] is True
    assert "still answered as leader" in resign["3.6.2"]["summary"]
    assert resign["3.7.0"]["status"] == "pass"
    assert verdicts["3.6.2"]["status"] == "pass" and verdicts["3.6.2"]["expectation"]["met"] == [
        "quorum.leader_resigns"]
    rows = {r.role: r for r in report(corpus.runs, corpus.runs, [7], None, compare=False)}
    assert (rows[AFFECTED].rate, rows[FIXED].rate) == ("1/1", "0/1")
    assert rows[AFFECTED].failing_checks == ("quorum.leader_resigns",) and rows[AFFECTED].first_failure_s
    page = (corpus.runs / "known-bugs.html").read_text()
    assert "KAFKA-15489" in page and "3.6.2" in page
