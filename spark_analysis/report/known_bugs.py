"""The known-bugs corpus report: `known-bugs.json` and `known-bugs.html` from the verified runs of
`experiments/known-bugs/` (what `make known-bugs` writes; no Spark: it reads each run's `verdict.json`).

Each corpus file is one real, fixed Kafka bug: its `matrix:` runs it on releases (`cluster.kafka`, or
`workload.client_version` for a client's bug), and its
`expect:` names the checks the affected releases fail; a release without an expectation is a fixed one. Owns
`collect_bug_runs` (one `BugRun` per run directory: bug, release, seed, the checks that failed, whether the
expectation held, the time from the run's start to its first failing evidence row), `bug_rows` (one row per
bug and release: the seeds that failed out of those run, the failing checks, the median time to the first
failing evidence) and the two renderings. A run whose verdict is missing counts as run and not failed, and is
listed as unverified: it is never a pass.
"""

from __future__ import annotations

import html
import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from spark_analysis.ingest.runinfo import load_run_info
from spark_analysis.verdict import VERDICT_FILE, read_verdict

JSON_FILE = "known-bugs.json"
HTML_FILE = "known-bugs.html"
AFFECTED, FIXED = "affected", "fixed"


@dataclass(frozen=True, slots=True)
class BugRun:
    """One run of a corpus file: one bug on one release with one seed."""

    bug: str
    release: str
    role: str
    """`affected` (the variant expects failures) or `fixed`."""
    seed: int | None
    run_dir: str
    verified: bool
    failed_checks: tuple[str, ...]
    """The checks whose own status is fail (expected or not)."""
    expected: tuple[str, ...]
    as_expected: bool
    """The verdict passed: every expected failure happened and nothing else failed."""
    first_failure_s: float | None
    """Seconds from the run's start to the earliest evidence row of a failed check."""

    @property
    def failed(self) -> bool:
        return bool(self.failed_checks)


@dataclass(frozen=True, slots=True)
class BugRow:
    """One bug on one release over every seed run."""

    bug: str
    release: str
    role: str
    expected: tuple[str, ...]
    seeds_run: int
    seeds_failed: int
    failed_seeds: tuple[int | None, ...]
    failing_checks: tuple[str, ...]
    unverified: int
    first_failure_s: float | None
    """Median over the failing seeds."""
    runs: tuple[str, ...]
    compare: str | None = None

    @property
    def rate(self) -> str:
        return f"{self.seeds_failed}/{self.seeds_run}"


def _first_failure(checks: Sequence[Any]) -> float | None:
    """The earliest `t` of the failed checks' evidence rows that state a problem (all rows where none does: the
    other rows are context, such as the newer leader a late resignation is measured from)."""
    rows = [e for c in checks if c.status == "fail" for e in c.evidence if isinstance(e, Mapping)]
    rows = [e for e in rows if "problem" in e] or rows
    times = [float(e["t"]) for e in rows if isinstance(e.get("t"), (int, float))]
    return round(min(times), 3) if times else None


def _release(info: Any) -> str:
    """What the bug's matrix varies: the client's release for a client bug (its variant names `client_version`),
    else the broker's."""
    variant = str(info.raw.get("variant") or "")
    client = info.raw.get("client")
    if "client_version=" in variant and isinstance(client, Mapping) and client.get("version"):
        return f"{client.get('name')} {client.get('version')}"
    return str(info.version or variant or "?")


def collect_bug_runs(run_dirs: Iterable[Path]) -> list[BugRun]:
    """A `BugRun` per run directory (its run.json names the experiment, variant and seed)."""
    out: list[BugRun] = []
    for run_dir in sorted(Path(d) for d in run_dirs):
        info = load_run_info(run_dir)
        release = _release(info)
        role = AFFECTED if info.expect_fail else FIXED
        verified = (run_dir / VERDICT_FILE).is_file()
        if not verified:
            out.append(BugRun(info.experiment or run_dir.name, release, role, info.seed, str(run_dir), False, (),
                              info.expect_fail, False, None))
            continue
        verdict = read_verdict(run_dir)
        failed = tuple(c.check_id for c in verdict.checks if c.status == "fail")
        out.append(BugRun(info.experiment or run_dir.name, release, role, info.seed, str(run_dir), True, failed,
                          info.expect_fail, verdict.status == "pass", _first_failure(verdict.checks)))
    return out


def bug_rows(runs: Sequence[BugRun]) -> list[BugRow]:
    """One row per (bug, release), affected release first, in bug order."""
    groups: dict[tuple[str, str, str], list[BugRun]] = {}
    for r in runs:
        groups.setdefault((r.bug, r.role, r.release), []).append(r)
    rows = []
    for (bug, role, release), group in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] != AFFECTED,
                                                                             kv[0][2])):
        failing = [r for r in group if r.failed]
        times = [r.first_failure_s for r in failing if r.first_failure_s is not None]
        rows.append(BugRow(bug, release, role, group[0].expected, len(group), len(failing),
                           tuple(r.seed for r in failing), tuple(sorted({c for r in group for c in r.failed_checks})),
                           sum(1 for r in group if not r.verified),
                           round(statistics.median(times), 3) if times else None, tuple(r.run_dir for r in group)))
    return rows


def corpus_document(rows: Sequence[BugRow], wall_s: float | None, seeds: Sequence[int]) -> dict[str, Any]:
    """The JSON document: the seeds, the wall time, every row, and per bug the rates of its affected and fixed
    releases."""
    bugs: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = bugs.setdefault(row.bug, {"affected": [], "fixed": []})
        entry[row.role].append(row.rate)
    return {"seeds": list(seeds), "wall_s": None if wall_s is None else round(wall_s, 1),
            "rows": [asdict(r) for r in rows], "bugs": bugs}


def render_corpus_html(doc: Mapping[str, Any], base: Path) -> str:
    """The page: one row per bug and release, with its rate, checks, time to first failure and compare link."""
    def cell(value: object) -> str:
        return html.escape("" if value is None else str(value))

    body = []
    for r in doc["rows"]:
        link = (f'<a href="{cell(Path(r["compare"]).relative_to(base) if r["compare"] else "")}">compare</a>'
                if r.get("compare") else "")
        goal = "goal ≥ 4/5" if r["role"] == AFFECTED else "goal 0/5"
        body.append(f"<tr><td>{cell(r['bug'])}</td><td>{cell(r['release'])}</td><td>{cell(r['role'])}</td>"
                    f"<td><b>{cell(r['seeds_failed'])}/{cell(r['seeds_run'])}</b> <small>{goal}</small></td>"
                    f"<td class=mono>{cell(', '.join(r['failing_checks']))}</td>"
                    f"<td>{cell(r['first_failure_s'])}</td><td>{cell(r['unverified'] or '')}</td><td>{link}</td></tr>")
    wall = f"; the corpus took {doc['wall_s']} s" if doc.get("wall_s") is not None else ""
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>kafka-chaos known bugs</title><style>"
            "body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:4px 8px}table{border-collapse:"
            "collapse}.mono{font-family:monospace}</style></head><body><h1>Known Kafka bugs, reproduced</h1>"
            f"<p>Seeds {cell(', '.join(map(str, doc['seeds'])))}{cell(wall)}. Each bug runs on a release it affects "
            "(its expected checks must fail) and on the first release that fixed it (nothing may fail). "
            "docs/known-bugs.md says what each bug is.</p><table><tr><th>bug</th><th>release</th><th>role</th>"
            "<th>seeds failed</th><th>failing checks</th><th>first failing evidence (s, median)</th>"
            "<th>unverified</th><th>pair</th></tr>" + "".join(body) + "</table></body></html>\n")


def write_corpus(out: Path, rows: Sequence[BugRow], wall_s: float | None, seeds: Sequence[int]) -> tuple[Path, Path]:
    doc = corpus_document(rows, wall_s, seeds)
    out.mkdir(parents=True, exist_ok=True)
    (out / JSON_FILE).write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
    (out / HTML_FILE).write_text(render_corpus_html(doc, out), encoding="utf-8")
    return out / JSON_FILE, out / HTML_FILE
