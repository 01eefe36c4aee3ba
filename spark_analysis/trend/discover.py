"""Which run directories a trend covers, and what each one's `run.json` says.

Owns the discovery rule: a run directory is a directory holding `run.json`, `verdict.json` or
`history.jsonl`, found directly under RUNS_DIR or one level down (RUNS_DIR/<night>/<run>);
hidden directories are skipped. Each found run becomes a `RunEntry` (its id is the path relative
to RUNS_DIR) with the tolerant `RunInfo` of its run.json (a missing or unreadable run.json is
noted, never fatal) and whether its verdict.json exists. Also owns the reproduce line of a run,
built by `harness.experiment.reproduce` (the CLI's own line) from what run.json recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from harness.errors import HarnessError
from spark_analysis.ingest.runinfo import RunInfo, RunInfoError, load_run_info
from spark_analysis.verdict import VERDICT_FILE

RUN_MARKERS = ("run.json", VERDICT_FILE, "history.jsonl")


class TrendError(HarnessError):
    """The trend cannot be built (no runs under RUNS_DIR, RUNS_DIR missing, output not writable)."""


@dataclass(frozen=True, slots=True)
class RunEntry:
    """One run directory found under RUNS_DIR."""

    run_id: str
    """The run directory relative to RUNS_DIR, with `/` separators (e.g. `2026-01-01/exp-20260101T000000Z`)."""
    path: Path
    info: RunInfo
    run_json_problem: str | None
    """Why run.json could not be used (missing, unreadable), or None."""
    has_verdict_file: bool

    @property
    def verdict_path(self) -> Path:
        return self.path / VERDICT_FILE

    @property
    def source(self) -> str | None:
        """The experiment file the run came from (run.json `source`), else the run's resolved copy."""
        source = self.info.raw.get("source")
        if isinstance(source, str) and source:
            return source
        resolved = self.path / "experiment.yaml"
        return str(resolved) if resolved.is_file() else None

    @property
    def variant(self) -> str:
        variant = self.info.raw.get("variant")
        return variant if isinstance(variant, str) else ""


def _is_run_dir(path: Path) -> bool:
    return path.is_dir() and any((path / marker).is_file() for marker in RUN_MARKERS)


def _children(path: Path) -> list[Path]:
    try:
        return sorted(p for p in path.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError as exc:
        raise TrendError(f"cannot list {path}: {exc}") from exc


def _entry(runs_dir: Path, path: Path) -> RunEntry:
    problem: str | None = None
    if not (path / "run.json").is_file():
        info, problem = RunInfo(), "no run.json"
    else:
        try:
            info = load_run_info(path)
        except RunInfoError as exc:
            info, problem = RunInfo(), str(exc)
    return RunEntry(
        run_id=path.relative_to(runs_dir).as_posix(),
        path=path,
        info=info,
        run_json_problem=problem,
        has_verdict_file=(path / VERDICT_FILE).is_file(),
    )


def discover_runs(runs_dir: Path) -> list[RunEntry]:
    """Every run directory directly under `runs_dir` or one level down, sorted by id."""
    runs_dir = Path(runs_dir)
    if not runs_dir.is_dir():
        raise TrendError(f"runs directory {runs_dir} does not exist or is not a directory")
    found: list[Path] = []
    for child in _children(runs_dir):
        if _is_run_dir(child):
            found.append(child)
            continue
        found.extend(grand for grand in _children(child) if _is_run_dir(grand))
    if not found:
        raise TrendError(f"no run directories under {runs_dir} (looked for {', '.join(RUN_MARKERS)} "
                         "directly below it and one level down)")
    return [_entry(runs_dir, path) for path in found]


def reproduce_for(entry: RunEntry, *, seed: int | None, backend: str | None) -> str | None:
    """The CLI's reproduce line for this run, or None when run.json/verdict lack source, seed or backend."""
    from harness.experiment.reproduce import reproduce_line

    source = entry.source
    if source is None or seed is None or not backend:
        return None
    return reproduce_line(source, seed=seed, backend=backend, run_dir=entry.path, variant=entry.variant or "")
