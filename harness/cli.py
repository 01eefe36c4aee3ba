"""`kafka-chaos`: validate, run and verify experiments; list faults; start a project (`init`); install Apache
Kafka and run its own tools against a run's cluster (`kafka tool`); run the embedded Toxiproxy server. Exit codes:
0 pass/valid, 1 fail (or a check unknown), 2 invalid input or harness error (`kafka tool`: the tool's own)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.cli_kafka_tool import KafkaParser
from harness.cli_verify import EXIT_ERROR, EXIT_FAIL, EXIT_PASS
from harness.cli_verify import err as _err
from harness.cli_verify import verify_and_print as _verify
from harness.errors import HarnessError, ValidationError
from harness.experiment.reproduce import reproduce_line as reproduce
from harness.experiment.schema import CLIENTS
from harness.install.kafka import BROKERS, DEFAULT_LINE, RETIRED_BROKER

if TYPE_CHECKING:
    from harness.cluster.base import ClusterBackend
    from harness.experiment.schema import Experiment
    from spark_analysis.warmup import Warmup

__all__ = ["EXIT_ERROR", "EXIT_FAIL", "EXIT_PASS", "build_parser", "main"]


def cmd_validate(args: argparse.Namespace) -> int:
    from harness.experiment import load_experiments

    worst = EXIT_PASS
    for file in args.files:
        try:
            exps = load_experiments(file)
        except ValidationError as exc:
            _err(f"{file}: invalid ({len(exc.problems)} problem(s))")
            _err(str(exc))
            worst = EXIT_ERROR
        else:
            exp = exps[0]
            c = exp.cluster
            shape = (f"{c.brokers} brokers" if c.mode == "zookeeper" else
                     f"KRaft, {c.brokers} brokers, {c.controllers} {'combined' if c.combined else 'dedicated'} "
                     "controllers")
            ops = f", {len(exp.operations)} actions" if exp.operations else ""
            print(f"{file}: valid ({exp.name}: {shape}, {len(exp.schedule)} faults{ops}, {exp.duration:g}s)")
            if exp.variant:
                print(f"  {len(exps)} matrix variants: {', '.join(e.variant for e in exps)}")
    return worst


def cmd_faults(args: argparse.Namespace) -> int:
    from harness.faults.catalog import describe_catalog

    print(describe_catalog())
    return EXIT_PASS


def cmd_schema(args: argparse.Namespace) -> int:
    from harness.experiment.json_schema import schema_text

    sys.stdout.write(schema_text())
    return EXIT_PASS


def cmd_init(args: argparse.Namespace) -> int:
    """Write the starter project (`harness.scaffold`) into DIR; list what was written and the command to run next."""
    from harness.scaffold import NEXT_STEP, init

    directory = Path(args.directory)
    written = init(directory, force=args.force)
    print(f"wrote {len(written)} files into {directory.absolute()}:")
    for path in written:
        print(f"  {path.relative_to(directory).as_posix()}")
    where = "" if directory.absolute() == Path.cwd() else f"cd {directory} && "
    print(f"next: {where}{NEXT_STEP}")
    print("  runs experiments/first-experiment.yaml on a real cluster (a few minutes; Java 17+), reports in runs/; "
          "KAFKA-CHAOS.md says the rest")
    import importlib.util

    if importlib.util.find_spec("pytest") is None:
        print(f"  pytest is not installed here: {sys.executable} -m pip install pytest")
    return EXIT_PASS


def _interrupt_on_sigterm() -> dict[int, Any]:
    """SIGTERM, SIGINT and SIGHUP (closed terminal, cancelled CI job) all stop a run the same way:
    the first one heals, tears down and records `interrupted`; a later one never cuts teardown short.
    Returns the previous handlers (`cmd_run` puts them back: `main` may run in a longer-lived process)."""
    from harness.engine.interrupts import INTERRUPTS

    return INTERRUPTS.install()


def cmd_run(args: argparse.Namespace) -> int:
    from harness.engine.interrupts import Interrupts

    previous = _interrupt_on_sigterm()
    try:
        return _cmd_run(args)
    finally:
        Interrupts.restore(previous)


def _cmd_run(args: argparse.Namespace) -> int:
    from harness.cluster.select import choose_backend, prefers_process
    from harness.engine.backend_needs import needs_process_backend
    from harness.experiment import load_experiment, load_experiment_text, load_experiments
    from harness.experiment.dump import dump_experiment

    try:
        exps = load_experiments(args.file) if args.variant is None else (load_experiment(args.file, args.variant),)
    except ValidationError as exc:
        _err(str(exc))
        return EXIT_ERROR
    if args.seed is not None:
        exps = tuple(dataclasses.replace(e, seed=args.seed) for e in exps)
    if args.broker is not None or args.kafka is not None:
        exps = tuple(dataclasses.replace(e, cluster=dataclasses.replace(
            e.cluster, broker=args.broker or e.cluster.broker,
            kafka_version=args.kafka or e.cluster.kafka_version)) for e in exps)
    if args.client is not None or args.client_version is not None:
        exps = tuple(dataclasses.replace(e, workload=dataclasses.replace(
            e.workload, client=args.client or e.workload.client,
            client_version=args.client_version or e.workload.client_version)) for e in exps)
    if any(v is not None for v in (args.seed, args.broker, args.kafka, args.client, args.client_version)):
        try:  # the overrides pass the loader's rules too, before any process starts
            for e in exps:
                load_experiment_text(dump_experiment(e), f"{e.source} (with --seed/--broker/--kafka/--client)")
        except ValidationError as exc:
            _err(str(exc))
            return EXIT_ERROR
    try:
        needs = next((needs_process_backend(e) for e in exps if needs_process_backend(e)), "")
        prefer = next((prefers_process(e.cluster) for e in exps if prefers_process(e.cluster)), "")
        backend, reason = choose_backend(args.backend, progress=print, process_only=needs, prefer_process=prefer)
    except HarnessError as exc:
        _err(f"error: {exc}")
        return EXIT_ERROR
    print(f"backend: {reason}")
    cleaner = getattr(backend, "clean_leftovers", None)
    if callable(cleaner):
        for line in cleaner() or ():
            print(f"cleaned leftover: {line}")
    from harness.engine.bundle import last_run_note

    found = last_run_note(Path(args.runs_dir)) if Path(args.runs_dir).is_dir() else None
    if found:
        print(found)
    worst = EXIT_PASS
    for n, exp in enumerate(exps, 1):
        if exp.variant:
            print(f"variant {exp.variant} ({n} of {len(exps)})")
        worst = max(worst, _run_one(exp, backend, reason, args))
        if _interrupted():
            if n < len(exps):
                print(f"skipped the other {len(exps) - n} variant(s)")
            break
    return worst


def _interrupted() -> bool:
    from harness.engine.interrupts import INTERRUPTS

    return INTERRUPTS.interrupted


def _run_one(exp: Experiment, backend: ClusterBackend, reason: str, args: argparse.Namespace) -> int:
    """Run, then verify: Spark starts and warms in the background during the run (`--no-warmup`: not)."""
    if args.no_verify or args.no_warmup:
        return _run_and_verify(exp, backend, reason, args, None)
    try:
        from spark_analysis.warmup import Warmup
    except ImportError:  # the verify says what is missing
        return _run_and_verify(exp, backend, reason, args, None)
    with Warmup(args.spark_master) as warmup:
        return _run_and_verify(exp, backend, reason, args, warmup)


def _run_and_verify(exp: Experiment, backend: ClusterBackend, reason: str, args: argparse.Namespace,
                    warmup: Warmup | None) -> int:
    from harness.cli_progress import RichProgress
    from harness.engine.runner import run_experiment

    progress = RichProgress(on_phase=warmup.hear_phase if warmup is not None else None)
    try:
        result = run_experiment(exp, backend, backend_reason=reason, runs_dir=Path(args.runs_dir), progress=progress)
    finally:
        with contextlib.suppress(OSError):  # the terminal may be gone (SIGHUP): the run is recorded anyway
            progress.close()
    if warmup is not None and (result.status in ("interrupted", "failed") or _interrupted()):
        warmup.abandon()  # not verified here: its driver JVM goes before the CLI returns
    if result.status == "interrupted" or _interrupted():  # never verified here: exit promptly
        with contextlib.suppress(OSError):
            print(f"run {result.status}: {result.run_dir}")
            if result.error:
                print(f"  {result.error}")
            print(f"not verified (interrupted); verify later with: kafka-chaos verify {result.run_dir}")
            print(reproduce_line(exp, backend.name, result.run_dir))
        return EXIT_ERROR
    if result.status == "failed":  # its record could not be written (a full disk): not verified here
        print(f"run failed: {result.run_dir}")
        _err(f"error: {result.error}")
        print(f"not verified; make room, then: kafka-chaos verify {result.run_dir}")
        return EXIT_ERROR
    print(f"run {result.status}: {result.run_dir}")
    if result.error:
        print(f"  {result.error}")
    code = EXIT_PASS if result.status == "completed" else EXIT_ERROR
    if args.no_verify:
        print(f"verify later with: kafka-chaos verify {result.run_dir}")
        return code
    if warmup is not None and warmup.started:
        print(warmup.wait().describe())
    verdict_code = _verify(result.run_dir, args.spark_master)
    if max(code, verdict_code) != EXIT_PASS:
        print(reproduce_line(exp, backend.name, result.run_dir))
    return max(code, verdict_code)


def reproduce_line(exp: Experiment, backend: str, run_dir: Path) -> str:
    """The command that runs this exact experiment again (variant, seed, backend) and what it ran on."""
    return reproduce(exp.source, seed=exp.seed, backend=backend, run_dir=run_dir, variant=exp.variant,
                     broker=exp.cluster.broker)


def cmd_verify(args: argparse.Namespace) -> int:
    run_dir = Path(args.run_dir)
    if not (run_dir / "history.jsonl").is_file():
        _err(f"error: {run_dir} is not a run directory (no history.jsonl)")
        return EXIT_ERROR
    return _verify(run_dir, args.spark_master, Path(args.out) if getattr(args, "out", None) else None)


def cmd_trend(runs_dir: Path, out: Path | None, spark_master: str | None) -> int:
    """Build the trend page of every run under `runs_dir`; 0 once written (the runs' own verdicts are shown on it)."""
    try:
        from spark_analysis.trend import build_trend
    except ImportError as exc:
        _err(f"error: the Spark verifiers are not available: {exc}")
        return EXIT_ERROR
    result = build_trend(runs_dir, out=out, spark_master=spark_master)
    header = result.trend["header"]
    print(f"trend: {header['runs']} runs over {len(header['nights'])} nights, {result.failed_runs} did not pass "
          f"({', '.join(f'{v} {k}' for k, v in header['by_status'].items())})")
    print(f"trend page: {result.html}  numbers: {result.json}")
    return EXIT_PASS


def cmd_report(args: argparse.Namespace) -> int:
    if args.trend is not None:
        if args.run_dirs:
            _err("error: give run directories or --trend RUNS_DIR, not both")
            return EXIT_ERROR
        return cmd_trend(Path(args.trend), Path(args.out) if args.out else None, args.spark_master)
    if not args.run_dirs or args.out:
        _err("error: report needs run directories (or --trend RUNS_DIR); --out goes with --trend")
        return EXIT_ERROR
    worst = EXIT_PASS
    for run_dir in args.run_dirs:
        worst = max(worst, cmd_verify(argparse.Namespace(run_dir=run_dir, spark_master=args.spark_master, out=None)))
    return worst


def _broker(value: str) -> str:
    """`--broker`'s value; `reference` is told that the reference broker was retired and what to write."""
    if value == "reference":
        raise argparse.ArgumentTypeError(RETIRED_BROKER)
    return value


def cmd_compare(args: argparse.Namespace) -> int:
    try:
        from spark_analysis.compare import cmd_compare as compare
    except ImportError as exc:
        _err(f"error: the Spark verifiers are not available: {exc}")
        return EXIT_ERROR
    return compare(Path(args.run_a), Path(args.run_b), Path(args.out) if args.out else None, args.spark_master)


def cmd_kafka(args: argparse.Namespace) -> int:
    from harness.install.cache import cache_root
    from harness.install.kafka import install_kafka, installed_kafkas, kafka_request

    if args.action == "tool":
        from harness.cli_kafka_tool import cmd_kafka_tool

        return cmd_kafka_tool(args)
    if args.action == "install":
        found = install_kafka(kafka_request(args.version), progress=print)
        print(found.describe())
        return EXIT_PASS
    installs = installed_kafkas()
    print(f"cache: {cache_root()}" + ("" if installs else " (no Apache Kafka installed)"))
    for k in installs:
        print(f"  {k.version}  {k.home}  (from {k.source}{'; with its tools' if k.has_tools else ''})")
    return EXIT_PASS


def cmd_toxiproxy(args: argparse.Namespace, rest: list[str]) -> int:
    if args.action == "install":
        from harness.install.toxiproxy import DEFAULT_VERSION, install_toxiproxy

        binary = install_toxiproxy(rest[0] if rest else DEFAULT_VERSION, progress=print)
        print(f"Toxiproxy server: {binary}\nuse it with: export TOXIPROXY_BIN={binary}")
        return EXIT_PASS
    from harness.toxiproxy.server import main as toxiproxy_main

    return int(toxiproxy_main(rest) or 0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafka-chaos", description="Chaos experiments for Apache Kafka.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("validate", help="check experiment files (exit 0 valid, 2 invalid)")
    p.add_argument("files", nargs="+")
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("run", help="run an experiment, then verify it")
    p.add_argument("file")
    p.add_argument("--backend", default="auto", choices=("auto", "containers", "process"))
    p.add_argument("--seed", type=int, default=None, help="override the experiment's seed")
    p.add_argument("--broker", default=None, type=_broker, choices=BROKERS,
                   help="override cluster.broker (auto: Apache Kafka where it is or can be installed)")
    p.add_argument("--client", default=None, choices=CLIENTS,
                   help="override workload.client: the client library the workloads run on")
    p.add_argument("--client-version", default=None, metavar="VERSION",
                   help="override workload.client_version: a kafka-clients release for java (default: the broker's), "
                   "a confluent-kafka release for librdkafka (default: the installed one, in process)")
    p.add_argument("--kafka", default=None, metavar="VERSION",
                   help="override cluster.kafka: an Apache Kafka release (3.9.2) or line (3.9)")
    p.add_argument("--variant", default=None, help="run one variant of a matrix experiment (default: every one)")
    p.add_argument("--runs-dir", default="runs")
    p.add_argument("--no-verify", action="store_true", help="record the history only")
    p.add_argument("--no-warmup", action="store_true",
                   help="start Spark when the run ends, not in the background while it runs (a cold verify)")
    p.add_argument("--spark-master", default=None)
    p.set_defaults(func=cmd_run)
    from harness.explore.command import add_parser as add_explore

    add_explore(sub)
    p = sub.add_parser("verify", help="run the Spark verifiers on a run directory")
    p.add_argument("run_dir")
    p.add_argument("--spark-master", default=None)
    p.add_argument("--out", metavar="DIR", default=None,
                   help="write verdict.json, report.html and junit.xml here (default: the run directory, or, when "
                        "it is read-only, <cache>/verified/<run>-<hash>/)")
    p.set_defaults(func=cmd_verify)
    p = sub.add_parser("report", help="rebuild verdict and reports of run directories, or the trend across runs")
    p.add_argument("run_dirs", nargs="*")
    p.add_argument("--trend", metavar="RUNS_DIR", default=None,
                   help="aggregate every run under RUNS_DIR (or RUNS_DIR/<night>/) into one trend page")
    p.add_argument("--out", metavar="FILE", default=None,
                   help="trend page path (default RUNS_DIR/trend.html; the numbers go beside it as .json)")
    p.add_argument("--spark-master", default=None)
    p.set_defaults(func=cmd_report)
    p = sub.add_parser("compare", help="line up two runs of one experiment and seed, fault by fault (HTML + JSON)")
    p.add_argument("run_a", metavar="RUN_A")
    p.add_argument("run_b", metavar="RUN_B")
    p.add_argument("--out", metavar="DIR", default=None, help="default: compare-<A>-vs-<B>/ next to RUN_B")
    p.add_argument("--spark-master", default=None)
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("faults", help="list every fault kind and operation (reassign, elect_preferred), their "
                       "parameters and what each backend does", aliases=["actions"])
    p.set_defaults(func=cmd_faults)
    p = sub.add_parser("schema", help="print the JSON Schema of experiment files (for editors: docs/editors.md)")
    p.set_defaults(func=cmd_schema)
    p = sub.add_parser("init", help="start a project: a first experiment, pytest.ini, a Makefile fragment, a nightly "
                       "GitHub workflow and KAFKA-CHAOS.md in DIR (then run pytest there)")
    p.add_argument("directory", metavar="DIR", nargs="?", default=".", help="where (default: the current directory)")
    p.add_argument("--force", action="store_true", help="overwrite files that exist already")
    p.set_defaults(func=cmd_init)
    p = sub.add_parser("kafka", help="Apache Kafka in the cache: install [VERSION] | list | tool NAME ARGS...")
    p.set_defaults(func=cmd_kafka)
    actions = p.add_subparsers(dest="action", required=True, parser_class=KafkaParser)
    a = actions.add_parser("install", help="install a release or a line into the cache")
    a.add_argument("version", nargs="?", default=DEFAULT_LINE,
                   help=f"a release (3.9.2) or a line (3.9: its newest); default {DEFAULT_LINE}")
    actions.add_parser("list", help="the installs in the cache")
    a = actions.add_parser("tool", allow_abbrev=False,
                           usage="kafka-chaos kafka tool NAME [--run RUN_DIR] [--kafka VERSION] [--] ARGS...",
                           help="run Kafka's own tool NAME (kafka-topics, kafka-consumer-groups, ...) of the run's "
                           "release against its cluster", description="Runs Kafka's script NAME (with or without "
                           ".sh) as `java -cp libs/* <its main class>` of the release; the tool's exit code and "
                           "output pass through. Everything after `--` is the tool's.")
    a.add_argument("name", metavar="NAME", help="kafka-topics, kafka-consumer-groups, kafka-acls, ... (.sh optional)")
    a.add_argument("--run", metavar="RUN_DIR", default=None,
                   help="a run directory: its release, and --bootstrap-server its cluster (while the run is up) "
                   "unless ARGS name a server (default: the one live run under --runs-dir, if any)")
    a.add_argument("--kafka", metavar="VERSION", default=None,
                   help="without --run: the release (default: the live run's, else the newest in the cache)")
    a.add_argument("--runs-dir", default="runs",
                   help="without --run: where to look for the one live run (default: runs)")
    a.set_defaults(tool_args=[])
    p = sub.add_parser("toxiproxy", help="embedded Toxiproxy server: serve [--host H] [--port P] [--seed N]; "
                       "or install [VERSION]: Shopify's server via `go install` into the cache")
    p.add_argument("action", choices=("serve", "install"))
    p.set_defaults(func=cmd_toxiproxy, passthrough=True)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    func: Any = args.func
    try:
        if getattr(args, "passthrough", False):
            return int(func(args, rest))
        if rest:
            parser.error(f"unrecognized arguments: {' '.join(rest)}")
        return int(func(args))
    except HarnessError as exc:
        _err(f"error: {exc}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        _err("interrupted")
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
