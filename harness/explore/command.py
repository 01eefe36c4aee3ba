"""`kafka-chaos explore FILE`: the command. Reads the file, draws and runs schedules on the chosen backend, shrinks
the first failure and writes `explore.json` and `minimal.yaml` into `--out`, printing its progress.

Exit codes: 1 when a failure was found (`minimal.yaml` reproduces it), 0 when the budget ended without one, 2 on
bad input, a backend that cannot run, or an exploration stopped by a signal (its report says where)."""

from __future__ import annotations

import argparse
from pathlib import Path

from harness.errors import HarnessError, ValidationError
from harness.experiment.durations import format_duration, parse_duration

EXIT_NONE, EXIT_FOUND, EXIT_ERROR = 0, 1, 2


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("explore", help="draw fault schedules until one fails, then shrink it into minimal.yaml")
    p.add_argument("file")
    p.add_argument("--budget", default="30m", help="wall-clock time for drawing and shrinking (default 30m)")
    p.add_argument("--faults", default=None,
                   help="comma-separated fault kinds to draw from (default: every one the cluster's mode has)")
    p.add_argument("--seed", type=int, default=None, help="the draws' seed (default: the experiment's)")
    p.add_argument("--variant", default=None, help="the variant of a matrix experiment to explore")
    p.add_argument("--from-schedule", action="store_true",
                   help="try the file's own schedule first, then the draws")
    p.add_argument("--find", default=None, metavar="CHECK",
                   help="look for CHECK's anomaly only: its failure, or anomalies the configuration permits")
    p.add_argument("--reruns", type=int, default=3, help="runs of each shrink candidate (default 3)")
    p.add_argument("--needed", type=int, default=2, help="failing runs of those that keep a candidate (default 2)")
    p.add_argument("--out", default=None, help="where explore.json, minimal.yaml and the runs go "
                                               "(default runs/explore-<name>)")
    p.add_argument("--fresh-cluster", action="store_true",
                   help="a cluster of its own for every schedule (default: one cluster, cleaned between schedules)")
    p.add_argument("--afresh", default="never", choices=("never", "auto", "always"),
                   help="confirm and shrink a failure on fresh clusters, as `kafka-chaos run` runs minimal.yaml "
                        "(auto: where a fresh run costs little more than a reused one, search.FRESH_CHEAP; default "
                        "never: on the reused cluster, then a recheck afresh)")
    p.add_argument("--backend", default="process", choices=("auto", "containers", "process"))
    p.add_argument("--spark-master", default=None)
    p.set_defaults(func=cmd_explore)


def cmd_explore(args: argparse.Namespace) -> int:
    from harness.cluster.select import choose_backend, prefers_process
    from harness.engine.backend_needs import needs_process_backend
    from harness.experiment import load_experiment
    from harness.experiment.check_ids import CHECK_IDS
    from harness.experiment.fields import did_you_mean
    from harness.explore.search import Budget, explore
    from harness.explore.session import EngineRunner, Exploration, write_results

    try:
        budget_s = parse_duration(args.budget)
        if not 1 <= args.needed <= args.reruns:
            raise HarnessError(f"--needed {args.needed} must be between 1 and --reruns {args.reruns}")
        exp = load_experiment(args.file, args.variant)
        kinds = tuple(k.strip() for k in args.faults.split(",") if k.strip()) if args.faults else None
        seed = exp.seed if args.seed is None else args.seed
        if args.find is not None and args.find not in CHECK_IDS:
            raise HarnessError(f"--find {args.find}: no such check; {did_you_mean(args.find, CHECK_IDS)}")
        exploration = Exploration.of(exp, Path(args.file).read_text(encoding="utf-8"), seed, kinds,
                                     args.from_schedule)
        backend, reason = choose_backend(args.backend, progress=print, process_only=needs_process_backend(exp),
                                         prefer_process=prefers_process(exp.cluster))
    except (ValidationError, HarnessError, ValueError) as exc:
        print(f"error: {exc}")
        return EXIT_ERROR
    out = Path(args.out or f"runs/explore-{exp.name}")
    print(f"explore {exp.source}: seed {seed}, budget {format_duration(budget_s)}, faults "
          f"{', '.join(exploration.space.kinds)}; the experiment's Kafka: {exp.cluster.kafka_version} "
          f"({exp.cluster.mode}); {reason}; out {out}")
    with EngineRunner(exploration, backend, reason, out / "runs", args.spark_master,
                      reuse=not args.fresh_cluster) as runner:
        result = explore(exploration.draw, runner, Budget(budget_s), needed=args.needed, reruns=args.reruns,
                         find=args.find, afresh={"never": False, "auto": None, "always": True}[args.afresh],
                         shortest_s=exploration.space.durations[0], say=print)
        clusters = runner.clusters
    if clusters is not None:
        result.clusters, result.fresh = clusters.clusters, tuple(clusters.fresh)
    for path in write_results(out, exploration, result, budget_s):
        print(f"wrote {path}")
    if result.stopped is not None:
        print(f"explore stopped: {result.stopped}" + (f"; the smallest failing schedule so far is in {out}/minimal.yaml"
                                                      if result.minimal is not None else ""))
        return EXIT_ERROR
    if result.failing is None:
        print(f"no failing schedule in {len(result.tried)} run(s)")
        return EXIT_NONE
    assert result.minimal is not None
    print(f"found: {', '.join(result.target)} fails; shrunk to {len(result.minimal.schedule)} fault(s) in "
          f"{sum(1 for s in result.shrink if s.kept and not s.recheck)} kept step(s) of "
          f"{sum(1 for s in result.shrink if not s.recheck)}"
          + ("" if result.local_minimum else " (the budget ended before a local minimum)")
          + (f"; judged on {result.afresh_why}" if result.afresh_why else "")
          + (f"; run again on fresh clusters: {result.recheck}" if result.recheck else ""))
    return EXIT_FOUND
