"""`kafka-chaos kafka tool NAME [--run RUN_DIR] [--kafka VERSION] [--] ARGS...`: Kafka's own tools (the scripts of
its `bin/`, `harness.kafka_tools`) of a run's release, against that run's cluster while it is up. Owns the command,
finding the run (`--run`, or the one live run under `--runs-dir`) and its argument parser (`KafkaParser`: what
follows `--` is the tool's)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from harness.cli_verify import err as _err


def cmd_kafka_tool(args: argparse.Namespace) -> int:
    """`kafka tool NAME [--run RUN_DIR] [--kafka VERSION] [--] ARGS...`: Kafka's own script NAME of the run's
    release, `--bootstrap-server` the run's unless ARGS name a server. Without `--run` (nor `--kafka`, nor a
    server in ARGS) the one live run under `--runs-dir` is the run, when there is one; else the release is
    `--kafka` or the newest cached and nothing is added. Returns the tool's exit code; its output passes through,
    and what the harness says goes to stderr."""
    import os
    import subprocess

    from harness.cluster.process_flavour import find_java
    from harness.errors import ConfigError
    from harness.install.kafka import ensure_tools, install_kafka, installed_kafkas, kafka_request, matches
    from harness.kafka_tools import read_run, tool_argv, tool_for, tool_name, with_bootstrap

    name = tool_name(args.name)  # an unknown NAME is refused before anything is installed
    tool_args: list[str] = list(args.tool_args)
    run = Path(args.run) if args.run is not None else _the_live_run(name, args)
    bootstrap = ""
    if run is not None:
        target = read_run(run)
        if args.kafka is not None and not matches(target.release, kafka_request(args.kafka)):
            raise ConfigError(f"--kafka {args.kafka} and --run {run} disagree: the run ran Apache Kafka "
                              f"{target.release}; leave --kafka out")
        release = target.release
        tool_args = with_bootstrap(tool_for(name, release), tool_args, target.bootstrap)
        if tool_args != list(args.tool_args):
            _check_run_is_up(target.run_dir, target.info)
            bootstrap = target.bootstrap
    elif args.kafka is not None:
        release = kafka_request(args.kafka)
    else:
        cached = installed_kafkas()
        if not cached:
            raise ConfigError("no Apache Kafka in the cache; hint: kafka-chaos kafka install, or --kafka VERSION")
        release = cached[-1].version
    kafka = install_kafka(release, progress=_err)
    tool_for(name, kafka.version)  # a tool the release lacks is refused before its tools are fetched
    kafka = ensure_tools(kafka, progress=_err)
    java = find_java(os.environ)
    if java is None:
        raise ConfigError("no java (JAVA_HOME/bin/java or java on PATH): Kafka's tools need Java 17+")
    if bootstrap:
        _err(f"{name} of Apache Kafka {kafka.version} against the run {run} (--bootstrap-server {bootstrap})")
        if target.client_properties and not any(a.endswith("config") for a in tool_args if a.startswith("--")):
            _err(f"the run's cluster is secured: pass its client properties, --command-config "
                 f"{target.client_properties} (--producer.config / --consumer.config for the console tools)")
    proc = subprocess.Popen(tool_argv(kafka, name, tool_args, java=java))
    try:
        rc = proc.wait()
    except KeyboardInterrupt:  # the tool had the same SIGINT (one process group): its own exit code
        rc = proc.wait()
    return rc if rc >= 0 else 128 - rc


def _the_live_run(name: str, args: argparse.Namespace) -> Path | None:
    """The one live run (`running`, its harness alive) under `--runs-dir`, for a tool that would connect and was
    told nowhere to (no `--run`, `--kafka`, or server in its arguments); None when there is none; a ConfigError
    naming them when there are several."""
    from harness.engine.bundle import run_is_up
    from harness.errors import ConfigError
    from harness.kafka_tools import names_a_server, takes_bootstrap

    runs_dir = Path(args.runs_dir)
    if args.kafka is not None or names_a_server(args.tool_args) or not takes_bootstrap(name) or not runs_dir.is_dir():
        return None
    live = []
    for run in sorted(runs_dir.iterdir()):
        try:
            info = json.loads((run / "run.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(info, dict) and run_is_up(info):
            live.append(run)
    if len(live) > 1:
        raise ConfigError(f"{len(live)} runs are up under {runs_dir}: {', '.join(r.name for r in live)}; "
                          "hint: choose one with --run RUN_DIR")
    return live[0] if live else None


def _check_run_is_up(run_dir: Path, info: Any) -> None:
    """A ConfigError unless the run is still running, its harness alive (its cluster is torn down at its end)."""
    from harness.engine.bundle import run_is_up
    from harness.errors import ConfigError

    status = info.get("status")
    if not run_is_up(info):
        state = f"ended {status}" if status != "running" else "marked running, but its harness is gone"
        raise ConfigError(f"{run_dir / 'run.json'}: the run {state}, so its cluster is down; hint: run the tool "
                          "while the run is up, or name a server yourself: -- --bootstrap-server HOST:PORT")


class KafkaParser(argparse.ArgumentParser):
    """The `kafka` actions' parser. For `tool` (which sets a `tool_args` default) everything after the first `--`
    is the tool's, never read here, and so are arguments before it that are not the harness's own."""

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self.get_default("tool_args") is None:
            return super().parse_known_args(args, namespace)
        strings = list(sys.argv[1:] if args is None else args)
        tail: list[str] = []
        if "--" in strings:
            cut = strings.index("--")
            strings, tail = strings[:cut], strings[cut + 1:]
        parsed, rest = super().parse_known_args(strings, namespace)
        parsed.tool_args = [*rest, *tail]
        return parsed, []


