"""The verdict of a run: every check's result, the run status, and the metadata around them.

Owns `Verdict` and its JSON form (`verdict.json`), and the status rule: the run status is the
worst status (fail > unknown > pass) of the checks NOT exempted by `verify.allow`; with no check
at all it is `unknown`; and a run that did not complete (`completion.incompleteness`: run.json's status is not
`completed`, or the history has no run.end saying so) is never `pass`: it is `unknown` unless a
check found a violation in what was recorded (`fail`). A failure's fault attribution travels in
each result's `fault`. `damage_note` and `Incomplete.reason` are the one wording of the damaged
lines and of the incompleteness that the CLI, report.html and junit.xml all show.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spark_analysis.facts.completion import Incomplete
from spark_analysis.ingest.runinfo import RunInfo
from spark_analysis.result import CheckResult, Status, worst

VERDICT_FILE = "verdict.json"
FORMAT_VERSION = 1


def counted_status(result: CheckResult) -> Status:
    """What a check's status counts for in the run status: an expected failure (`expect:`) that happened counts as
    pass, one that did not happen as fail; unknown stays unknown."""
    if not result.expected:
        return result.status
    return {"fail": "pass", "pass": "fail"}.get(result.status, "unknown")  # type: ignore[return-value]


def run_status(results: Sequence[CheckResult], incomplete: Incomplete | Mapping[str, Any] | None = None,
               expectation: Mapping[str, Any] | None = None) -> Status:
    """The worst counted status (`counted_status`) of the checks not allowed; `unknown` with no check; never
    `pass` when the run is `incomplete` (a check's `fail` still wins: fail > unknown), nor when a check the
    experiment expects to fail did not run."""
    counted = [counted_status(r) for r in results if not r.allowed]
    if not results:
        return "unknown"
    if incomplete or (expectation or {}).get("not_run"):
        counted.append("unknown")
    return worst(counted)


def apply_expect(results: Sequence[CheckResult], run: RunInfo) -> tuple[list[CheckResult], dict[str, Any] | None]:
    """The results with `expected` set on the checks `expect:` names, and the expectation's outcome: which expected
    failures happened (`met`), which checks passed instead (`unmet`), which never ran or could not decide
    (`not_run`, `undecided`); None when the run expects no failure."""
    if not run.expect_fail:
        return list(results), None
    wanted = set(run.expect_fail)
    marked = [replace(r, expected=r.check_id in wanted) for r in results]
    by_id = {r.check_id: r for r in marked}
    outcome: dict[str, list[str]] = {"met": [], "unmet": [], "undecided": [], "not_run": []}
    for check_id in run.expect_fail:
        r = by_id.get(check_id)
        key = "not_run" if r is None else {"fail": "met", "pass": "unmet"}.get(r.status, "undecided")
        outcome[key].append(check_id)
    return marked, {"fail": list(run.expect_fail), "why": run.expect_why, **outcome}


def expectation_note(expectation: Mapping[str, Any] | None) -> str | None:
    """'expected failures: 1 of 1 happened (quorum.leader_resigns); why: KAFKA-15489', or None."""
    if not expectation:
        return None
    met, total = expectation.get("met") or [], expectation.get("fail") or []
    parts = [f"expected failures: {len(met)} of {len(total)} happened" + (f" ({', '.join(met)})" if met else "")]
    for key, what in (("unmet", "passed instead"), ("undecided", "could not decide"), ("not_run", "did not run")):
        if expectation.get(key):
            parts.append(f"{what}: {', '.join(expectation[key])}")
    if expectation.get("why"):
        parts.append(f"why: {expectation['why']}")
    return "; ".join(parts)


def damage_note(history: Mapping[str, Any]) -> str | None:
    """'37 of 412 history lines skipped (37 torn; poll 30, ack 7), first at line 120', or None."""
    damage = history.get("damage") or {}
    skipped = int(history.get("skipped_lines") or damage.get("skipped_lines") or 0)
    if not skipped:
        return None
    kinds = ", ".join(f"{n} {k}" for k, n in sorted((damage.get("by_kind") or {}).items(), key=lambda kv: -kv[1]))
    types = ", ".join(f"{k} {n}" for k, n in sorted((damage.get("by_type") or {}).items(), key=lambda kv: -kv[1]))
    detail = "; ".join(x for x in (kinds, types and f"types {types}") if x)
    first = next((d.get("line") for d in damage.get("sample") or () if d.get("line")), None)
    return (f"{skipped} of {history.get('lines', '?')} history lines skipped" + (f" ({detail})" if detail else "")
            + (f", first at line {first}" if first else ""))


def apply_allow(results: Sequence[CheckResult], run: RunInfo) -> list[CheckResult]:
    return [replace(r, allowed=run.is_allowed(r.check_id)) for r in results]


def run_metadata(run: RunInfo) -> dict[str, Any]:
    return {
        "title": run.title,
        "experiment": run.experiment,
        "seed": run.seed,
        "backend": run.backend,
        "backend_reason": run.backend_reason,
        "broker": {"flavour": run.flavour, "version": run.version, "bugs": list(run.bugs)},
        "client": {"name": run.client, "version": run.client_version, "title": run.client_title},
        "versions": dict(run.versions),
        "started": run.started,
        "ended": run.ended,
        "status": run.status,
        "verify": {"checks": list(run.checks), "allow": list(run.allow), "slo": dict(run.slo),
                   "expect": {"fail": list(run.expect_fail), "why": run.expect_why}},
    }


@dataclass(frozen=True, slots=True)
class Verdict:
    """Everything `verdict.json` holds."""

    status: Status
    checks: tuple[CheckResult, ...]
    run: Mapping[str, Any]
    history: Mapping[str, Any] = field(default_factory=dict)
    faults: tuple[Mapping[str, Any], ...] = ()
    not_selected: tuple[str, ...] = ()
    analysis: Mapping[str, Any] = field(default_factory=dict)
    timeline: Mapping[str, Any] = field(default_factory=dict)
    incomplete: Mapping[str, Any] | None = None
    """`Incomplete.to_json()` of a run that did not complete; None for one that did."""
    expectation: Mapping[str, Any] | None = None
    """`apply_expect`'s outcome of the run's `expect:`; None when it expects no failure."""

    @property
    def title(self) -> str:
        return str(self.run.get("title") or "unknown broker")

    def by_id(self, check_id: str) -> CheckResult:
        for r in self.checks:
            if r.check_id == check_id:
                return r
        raise KeyError(check_id)

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "unknown": 0, "allowed": 0, "expected": 0, "permitted": 0}
        for r in self.checks:
            key = ("allowed" if r.allowed and r.status != "pass" else
                   "expected" if r.expected and r.status == "fail" else counted_status(r))
            out[key] += 1
            out["permitted"] += bool(r.permitted)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "status": self.status,
            "counts": self.counts(),
            "run": dict(self.run),
            "history": dict(self.history),
            "faults": [dict(f) for f in self.faults],
            "not_selected": list(self.not_selected),
            "analysis": dict(self.analysis),
            "checks": [r.to_json() for r in self.checks],
            "timeline": dict(self.timeline),
            "incomplete": dict(self.incomplete) if self.incomplete else None,
            "expectation": dict(self.expectation) if self.expectation else None,
        }

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> Verdict:
        return Verdict(
            status=data["status"],
            checks=tuple(CheckResult.from_json(c) for c in data.get("checks", ())),
            run=dict(data.get("run") or {}),
            history=dict(data.get("history") or {}),
            faults=tuple(data.get("faults") or ()),
            not_selected=tuple(data.get("not_selected") or ()),
            analysis=dict(data.get("analysis") or {}),
            timeline=dict(data.get("timeline") or {}),
            incomplete=dict(data["incomplete"]) if data.get("incomplete") else None,
            expectation=dict(data["expectation"]) if data.get("expectation") else None,
        )

    def write(self, run_dir: Path) -> Path:
        path = Path(run_dir) / VERDICT_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1, default=str, allow_nan=False), encoding="utf-8")
        tmp.replace(path)
        return path


def read_verdict(run_dir: Path) -> Verdict:
    return Verdict.from_json(json.loads((Path(run_dir) / VERDICT_FILE).read_text(encoding="utf-8")))
