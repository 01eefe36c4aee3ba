"""What `kafka-chaos explore` runs on: the experiment file it explores, the schedules it draws from it, the real runner
(a run through the engine, then the Spark verifiers in one session kept warm), and the files it writes
(`explore.json`, `explore.html`, `minimal.yaml`).

Owns `Exploration` (the base document and its fault space), `EngineRunner` and `write_results`. A drawn schedule is
one of `harness.faults.generator`'s (Jepsen's target choices over the cluster's shape: one node, a minority, a
majority, leaders, the controller, correlated losses), pure and deterministic given the seed and its index, and drawn
again until the loader accepts it. The file's `explore:` block narrows the space (kinds, faults per schedule,
durations, window; `--faults` overrides its kinds). The schedules share one cluster, cleaned between them and replaced
when a run leaves it unhealthy (`harness.explore.reuse`); `--fresh-cluster` gives each its own.
"""

from __future__ import annotations

import copy
import json
import random
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from harness.cluster.base import ClusterBackend
from harness.errors import HarnessError, ValidationError
from harness.experiment import load_experiment_text
from harness.experiment.dump import experiment_to_dict
from harness.experiment.durations import format_duration, parse_duration
from harness.experiment.schema import Experiment
from harness.explore.page import HTML_FILE, render_explore_html
from harness.explore.reuse import ReusedCluster
from harness.explore.search import ExploreResult, Outcome, Stopped
from harness.faults.generator import KRAFT_KINDS, TARGETS, ZK_KINDS, Entry, FaultSpace, draw_schedule, uncovered

DRAWS = 50
"""Draws per schedule index before giving up (the loader refuses a few: overlaps a kind forbids)."""
MIN_DURATION_S = 30.0
"""The chaos phase explore gives a drawn schedule at least (faults start from 3 s and last up to 16 s)."""


@dataclass(frozen=True, slots=True)
class Exploration:
    """The experiment being explored: its loaded form, its document (the schedule replaced per draw) and its
    fault space."""

    exp: Experiment
    doc: dict[str, Any]
    space: FaultSpace
    seed: int
    source: str
    written: tuple[Entry, ...] | None = None
    """The file's own schedule, tried first (`--from-schedule`) as schedule 0; the draws then follow."""

    @classmethod
    def of(cls, exp: Experiment, text: str, seed: int, kinds: tuple[str, ...] | None,
           from_schedule: bool = False) -> Exploration:
        doc = yaml.safe_load(text)
        if not isinstance(doc, dict):
            raise HarnessError(f"{exp.source}: not a mapping")
        if "matrix" in doc:  # the chosen variant, resolved (every default filled in, as a run directory keeps it)
            if not exp.variant:
                raise HarnessError(f"{exp.source}: a matrix experiment; explore one variant of it with --variant")
            doc = experiment_to_dict(exp)
        kraft = exp.cluster.mode == "kraft"
        allowed = KRAFT_KINDS if kraft else ZK_KINDS
        narrowed = exp.explore
        chosen = kinds or narrowed.faults or allowed
        unknown = [k for k in chosen if k not in allowed]
        if unknown:
            raise HarnessError(f"--faults: {', '.join(unknown)} not in the {exp.cluster.mode} fault space "
                               f"({', '.join(allowed)})")
        duration = max(exp.duration, MIN_DURATION_S)
        window = narrowed.window or (3.0, max(4.0, duration - narrowed.durations[1]))
        if window[1] >= duration:
            raise HarnessError(f"{exp.source}: explore.window ends at {format_duration(window[1])}, not before the "
                               f"run's {format_duration(duration)} of chaos")
        topics = tuple(t.name for t in exp.topics) or ("orders",)
        groups = tuple(c.group for c in exp.workload.consumers) or ("billing",)
        partitions = min((t.partitions for t in exp.topics), default=1)
        targets = narrowed.targets or TARGETS
        if bare := uncovered(chosen, targets):
            raise HarnessError(f"{exp.source}: explore.targets ({', '.join(targets)}) leave {', '.join(bare)} "
                               "nothing to aim at; add one of their choices or pass other --faults")
        rated = dict(narrowed.rates)
        rates = tuple(rated.get(k, 1.0) for k in chosen) if rated else ()
        if rates and not any(rates):
            raise HarnessError(f"{exp.source}: explore.rates leave every kind of --faults at 0")
        space = FaultSpace(kinds=tuple(chosen), faults=narrowed.per_schedule, window=window,
                           durations=narrowed.durations, topics=topics, groups=groups, partitions=partitions,
                           overlap=narrowed.overlap, targets=targets, rates=rates, concurrent=narrowed.concurrent)
        written = tuple(dict(e) for e in doc.get("schedule") or ()) if from_schedule else None
        if from_schedule and not written:
            raise HarnessError(f"{exp.source}: --from-schedule, but the file has no schedule to start from")
        for key in ("schedule", "expect"):
            doc.pop(key, None)
        doc["duration"] = format_duration(duration)
        return cls(exp, doc, space, seed, exp.source, written)

    def text(self, schedule: tuple[Entry, ...], duration_s: float, seed: int | None = None,
             comment: str = "") -> str:
        doc = copy.deepcopy(self.doc)
        doc["schedule"] = [dict(e) for e in schedule]
        doc["duration"] = format_duration(duration_s)
        doc["seed"] = self.seed if seed is None else seed
        return comment + yaml.safe_dump(doc, sort_keys=False)

    def load(self, schedule: tuple[Entry, ...], duration_s: float, label: str) -> Experiment:
        """The experiment with `schedule` (ValidationError when the loader refuses it)."""
        return load_experiment_text(self.text(schedule, duration_s), f"<explore {self.source} {label}>")

    def draw(self, index: int) -> tuple[tuple[Entry, ...], float]:
        """Schedule `index`: pure given the seed and the index (with `written`, schedule 0 is the file's own and
        draw i is schedule i + 1)."""
        duration = parse_duration(str(self.doc["duration"]))
        if self.written is not None:
            if index == 0:
                return self.written, duration
            index -= 1
        rng = random.Random(f"kafka-chaos/explore/{self.seed}/{index}")
        c = self.exp.cluster
        for _ in range(DRAWS):
            schedule = tuple(draw_schedule(rng, self.space, c.brokers, c.voter_ids(), c.mode == "kraft"))
            try:
                self.load(schedule, duration, f"draw {index}")
            except ValidationError:
                continue
            return schedule, duration
        raise HarnessError(f"no schedule the loader accepts in {DRAWS} draws (index {index}); narrow --faults")


def resolved_targets(history: Path) -> tuple[tuple[int, str], ...]:
    """Where each scheduled fault on one node resolved in a run: (its schedule index, the node), from its
    `fault.start` (a step of an operation, `fault_id` "0.3", is none of them)."""
    from harness.history.jsonl import iter_lines

    def fault_starts(text: str) -> object:  # the other lines are not parsed
        return json.loads(text) if '"fault.start"' in text else {}

    out: list[tuple[int, str]] = []
    for line in iter_lines(history, decode=fault_starts):
        ev = line.record
        if ev is None or ev.get("type") != "fault.start":
            continue
        fid, target = ev.get("fault_id"), ev.get("target")
        if isinstance(fid, int) and isinstance(target, list) and len(target) == 1 and isinstance(target[0], str):
            out.append((fid, target[0]))
    return tuple(out)


class EngineRunner:
    """A run through the engine, then the verifiers (one Spark session for all). With `reuse` (the default) the runs
    share one cluster, cleaned between them and replaced when a run leaves it unhealthy (`harness.explore.reuse`);
    without, each run brings its own cluster up and down. A context manager: leaving it takes the cluster down."""

    def __init__(self, exploration: Exploration, backend: ClusterBackend, reason: str, runs_dir: Path,
                 spark_master: str | None = None, reuse: bool = True) -> None:
        from harness.engine.backend_needs import cluster_spec

        self.exploration = exploration
        self.backend = backend
        self.reason = reason
        self.runs_dir = runs_dir
        self.spark_master = spark_master
        self.clusters = ReusedCluster(backend, reason, cluster_spec(exploration.exp), runs_dir.parent / "clusters") \
            if reuse else None
        self._spark: Any = None

    def __call__(self, schedule: tuple[Entry, ...], duration_s: float, label: str, fresh: bool = False) -> Outcome:
        from spark_analysis.session.spark_session import get_session
        from spark_analysis.verify import verify_run

        try:
            exp = self.exploration.load(schedule, duration_s, label)
        except ValidationError as exc:
            return Outcome("unknown", note=f"the loader refused it: {str(exc).splitlines()[0]}", refused=True)
        result, note = self._run(exp, fresh)
        if result.status in ("interrupted", "failed"):  # a signal, or a record that could not be written
            raise Stopped(f"{label} {result.status}: {result.error} ({result.run_dir})")
        if result.status != "completed":
            return Outcome("unknown", run_dir=str(result.run_dir), note=f"run {result.status}: {result.error}")
        if self._spark is None:
            self._spark = get_session(self.spark_master)
        verdict = verify_run(result.run_dir, spark=self._spark)
        failing = tuple(c.check_id for c in verdict.checks if c.status == "fail")
        permitted = tuple(c.check_id for c in verdict.checks if c.permitted)
        return Outcome(verdict.status, failing, str(result.run_dir), note=note, permitted=permitted,
                       resolved=resolved_targets(Path(result.run_dir) / "history.jsonl"))

    def _run(self, exp: Experiment, fresh: bool) -> tuple[Any, str | None]:
        """The run, on the reused cluster where there is one (`fresh`: on a cluster of its own, the reused one taken
        down first so that two never share the machine); a run that could not reach its steady state on a cluster
        that had served runs before is run again once on a fresh cluster (the note says so)."""
        from harness.engine.runner import run_experiment

        if self.clusters is None or fresh:
            note = None
            if self.clusters is not None:
                self.clusters.close()
                note = "on a cluster of its own, as kafka-chaos run would run it"
            return run_experiment(exp, self.backend, backend_reason=self.reason, runs_dir=self.runs_dir), note
        backend, reason = self.clusters.lend()
        served = self.clusters.runs
        result = run_experiment(exp, backend, backend_reason=reason, runs_dir=self.runs_dir)
        self.clusters.after(exp, result.status)
        if result.status != "aborted" or served == 0:
            return result, None
        backend, reason = self.clusters.lend()
        again = run_experiment(exp, backend, backend_reason=reason, runs_dir=self.runs_dir)
        self.clusters.after(exp, again.status)
        return again, f"ran again on a fresh cluster: on the reused one it did not reach its steady state " \
                      f"({result.error}; {result.run_dir})"

    def close(self) -> None:
        if self.clusters is not None:
            self.clusters.close()

    def __enter__(self) -> EngineRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_results(out: Path, exploration: Exploration, result: ExploreResult, budget_s: float) -> list[Path]:
    """`explore.json` (every run, the shrink path), `explore.html` (the same, to read) and, when a failure was found,
    `minimal.yaml`: an ordinary experiment file with the shrunk schedule and the explored seed, its failing
    checks in a comment."""
    out.mkdir(parents=True, exist_ok=True)
    written = [out / "explore.json"]
    doc = {
        "experiment": exploration.source, "seed": exploration.seed, "budget_s": budget_s,
        "fault_kinds": list(exploration.space.kinds), "from_schedule": exploration.written is not None,
        "find": result.find, "clusters": result.clusters, "fresh_clusters": list(result.fresh),
        "found": result.failing is not None, "confirmed": result.confirmed, "unconfirmed": list(result.unconfirmed),
        "target_checks": list(result.target), "local_minimum": result.local_minimum, "recheck": result.recheck,
        "afresh": result.afresh, "afresh_why": result.afresh_why,
        "tried": [{"purpose": t.purpose, "schedule": list(t.schedule), "duration_s": t.duration_s,
                   "ended_s": t.ended_s, "shrink_step": t.shrink_step, "fresh": t.fresh, "confirms": t.confirms,
                   "outcome": asdict(t.outcome)}
                  for t in result.tried],
        "shrink": [{"step": s.step, "kept": s.kept, "recheck": s.recheck, "outcomes": [asdict(o) for o in s.outcomes]}
                   for s in result.shrink],
        "stopped": result.stopped,
        "minimal": None if result.minimal is None else {"schedule": list(result.minimal.schedule),
                                                        "duration_s": result.minimal.duration_s},
    }
    (out / "explore.json").write_text(json.dumps(doc, indent=1, default=str) + "\n", encoding="utf-8")
    (out / HTML_FILE).write_text(render_explore_html(json.loads(json.dumps(doc, default=str)), out), encoding="utf-8")
    written.append(out / HTML_FILE)
    if result.minimal is not None and result.failing is not None:
        state = "a local minimum" if result.local_minimum else "the budget ended before a local minimum"
        how = (f' --variant "{exploration.exp.variant}"' if exploration.exp.variant else "") + (
            f" --find {result.find}" if result.find else "")
        comment = (f"# Found by `kafka-chaos explore {exploration.source}{how} --seed {exploration.seed}`: its verdict "
                   f"shows {', '.join(result.target)}\n# (failed, or permitted by the configuration"
                   f"{'' if result.confirmed else ', in one run: the budget ended before it was run again'}; "
                   f"shrunk from {len(result.failing.schedule)} faults to {len(result.minimal.schedule)}; {state})."
                   + (f"\n# Run again on fresh clusters after the shrink: {result.recheck}." if result.recheck
                      else "") + "\n"
                   "# Run it: kafka-chaos run minimal.yaml\n")
        (out / "minimal.yaml").write_text(exploration.text(result.minimal.schedule, result.minimal.duration_s,
                                                           comment=comment), encoding="utf-8")
        written.append(out / "minimal.yaml")
    return written
