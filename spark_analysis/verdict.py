"""The verdict of a run: every check's result, the run status, and the metadata around them.

Owns `Verdict` and its JSON form (`verdict.json`), and the status rule: the run status is the
worst status (fail > unknown > pass) of the checks NOT exempted by `verify.allow`; with no check
at all it is `unknown`. A failure's fault attribution travels in each result's `fault`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from spark_analysis.result import CheckResult, Status, worst
from spark_analysis.runinfo import RunInfo

VERDICT_FILE = "verdict.json"
FORMAT_VERSION = 1


def run_status(results: Sequence[CheckResult]) -> Status:
    counted = [r.status for r in results if not r.allowed]
    if not results:
        return "unknown"
    return worst(counted)


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
        "versions": dict(run.versions),
        "started": run.started,
        "ended": run.ended,
        "status": run.status,
        "verify": {"checks": list(run.checks), "allow": list(run.allow), "slo": dict(run.slo)},
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

    @property
    def title(self) -> str:
        return str(self.run.get("title") or "unknown broker")

    def by_id(self, check_id: str) -> CheckResult:
        for r in self.checks:
            if r.check_id == check_id:
                return r
        raise KeyError(check_id)

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "unknown": 0, "allowed": 0}
        for r in self.checks:
            out["allowed" if r.allowed and r.status != "pass" else r.status] += 1
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
        )

    def write(self, run_dir: Path) -> Path:
        path = Path(run_dir) / VERDICT_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=1, default=str, allow_nan=False), encoding="utf-8")
        tmp.replace(path)
        return path


def read_verdict(run_dir: Path) -> Verdict:
    return Verdict.from_json(json.loads((Path(run_dir) / VERDICT_FILE).read_text(encoding="utf-8")))
