"""Kafka's own command-line tools (`kafka-topics.sh` and the rest) without their scripts, against a run's cluster.

Owns `TOOLS`, the table of which main class each script runs in which releases (a script is one line,
`kafka-run-class.sh <main class> "$@"`, and the class moved from core to the tools module over the 3.x and 4.x
releases); `tool_for` (a name, with or without `.sh`, in a release); `tool_argv` (the java command line: the
install's `libs/` as classpath, the tools' logging to stderr, the script's heap); `with_bootstrap` (a
`--bootstrap-server` added unless the arguments name a server); and `read_run`/`bootstrap_of` (the release and
the bootstrap address a run directory recorded). The install itself, `kafka-tools` and its dependencies
included, is `harness.install.kafka`'s; `kafka-chaos kafka tool` (harness/cli_kafka_tool.py) runs the command.

Where the table was read: the scripts `bin/<name>.sh` of apache/kafka at every release tag from 2.8.0 to
3.9.0-rc3 and at trunk 1eb7644 (2024-10-25), in the git mirror (`git show <tag>:bin/kafka-topics.sh`); for the
4.x releases, whose tags the mirror lacks, the jars of Maven Central: the release's `kafka-tools-<v>.jar` holds
the class and `kafka_2.13-<v>.jar` no longer holds the old one (each move removed the old class). Whether a tool
takes `--bootstrap-server` was read from its option parser at the same places. docs/apache-kafka.md "Kafka's
tools" lists the same table.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.experiment.fields import did_you_mean
from harness.install.kafka import KafkaInstall
from harness.install.kafka_files import classpath
from harness.model.releases import Release

LEAD = "lead"
"""`--bootstrap-server` goes before the tool's arguments (a global option, also before an argparse4j subcommand)."""
AFTER_SUBCOMMAND = "after-subcommand"
"""`--bootstrap-server` is an option of the subcommand (`kafka-cluster.sh cluster-id --bootstrap-server ...`)."""
NONE = ""
"""The tool takes no `--bootstrap-server` (a local tool, or one that reads it from producer properties)."""

SERVER_FLAGS = ("--bootstrap-server", "--bootstrap-controller", "-b", "--broker-list", "--zookeeper")
"""Arguments that already say where to connect: no `--bootstrap-server` is added beside them."""

_TRUNK = "trunk 1eb7644 (2024-10-25)"


def _read(name: str, tags: str, *, jars: str = "") -> str:
    """Where an entry was read: `bin/<name>.sh` at apache/kafka tags, and which 4.x jars hold its class."""
    return f"bin/{name}.sh at {tags}" + (f"; {jars}" if jars else "")


def _moved(v: str) -> str:
    return f"kafka-tools-{v}.jar holds it and kafka_2.13-{v}.jar no longer the old class"


_TOOLS_4X = "kafka-tools-4.0.0 to 4.4.0.jar hold it"
_UNTIL_NOW = f"3.9.0-rc3, {_TRUNK}"


@dataclass(frozen=True, slots=True)
class Tool:
    """One script over a range of releases: `since` (inclusive) to `until` (exclusive; None: still)."""

    name: str
    main: str
    since: str
    until: str | None
    source: str
    bootstrap: str = LEAD
    heap: str = "-Xmx256M"
    """`KAFKA_HEAP_OPTS` as the script leaves it (kafka-run-class.sh: 256M; console and perf tools: 512M)."""

    def covers(self, release: Release) -> bool:
        low = Release.parse(self.since)
        high = Release.parse(self.until) if self.until else None
        return low is not None and low <= release and (high is None or release < high)


def _tools(name: str, *ranges: tuple[str, str, str | None, str], bootstrap: str = LEAD,
           heap: str = "-Xmx256M") -> list[Tool]:
    return [Tool(name, main, since, until, source, bootstrap, heap) for main, since, until, source in ranges]


def _split(name: str, old: str, new: str, moved: str, last_old_tag: str, *, bootstrap: str = LEAD,
           heap: str = "-Xmx256M") -> list[Tool]:
    """A script whose class moved from `old` to `new` in release `moved` (a 3.x release: read from the tags)."""
    return _tools(name, (old, "2.8.0", moved, _read(name, f"2.8.0-{last_old_tag}")),
                  (new, moved, None, _read(name, f"{moved}-{_UNTIL_NOW}", jars=_TOOLS_4X)),
                  bootstrap=bootstrap, heap=heap)


_ADMIN, _TOOLS, _CORE = "kafka.admin.", "org.apache.kafka.tools.", "kafka.tools."
_BIG = "-Xmx512M"

TOOLS: tuple[Tool, ...] = tuple([
    *_split("kafka-topics", _ADMIN + "TopicCommand", _TOOLS + "TopicCommand", "3.7.0", "3.6.2"),
    *_split("kafka-consumer-groups", _ADMIN + "ConsumerGroupCommand",
            _TOOLS + "consumer.group.ConsumerGroupCommand", "3.8.0", "3.7.1"),
    *_tools("kafka-acls",
            (_ADMIN + "AclCommand", "2.8.0", "4.0.0", _read("kafka-acls", f"2.8.0-{_UNTIL_NOW}")),
            (_TOOLS + "AclCommand", "4.0.0", None, _moved("4.0.0"))),
    *_split("kafka-reassign-partitions", _ADMIN + "ReassignPartitionsCommand",
            _TOOLS + "reassign.ReassignPartitionsCommand", "3.7.0", "3.6.2"),
    *_tools("kafka-configs",
            (_ADMIN + "ConfigCommand", "2.8.0", "4.4.0",
             _read("kafka-configs", f"2.8.0-{_UNTIL_NOW}", jars="kafka_2.13-4.0.0 to 4.3.0.jar hold it")),
            (_TOOLS + "ConfigCommand", "4.4.0", None, _moved("4.4.0"))),
    *_split("kafka-features", _ADMIN + "FeatureCommand", _TOOLS + "FeatureCommand", "3.6.0", "3.5.2"),
    *_tools("kafka-metadata-quorum",
            (_ADMIN + "MetadataQuorumCommand", "3.3.0", "3.4.0", _read("kafka-metadata-quorum", "3.3.0-3.3.2")),
            (_TOOLS + "MetadataQuorumCommand", "3.4.0", None,
             _read("kafka-metadata-quorum", f"3.4.0-{_UNTIL_NOW}", jars=_TOOLS_4X))),
    *_split("kafka-leader-election", _ADMIN + "LeaderElectionCommand", _TOOLS + "LeaderElectionCommand",
            "3.7.0", "3.6.2"),
    *_tools("kafka-broker-api-versions",
            (_ADMIN + "BrokerApiVersionsCommand", "2.8.0", "4.0.0",
             _read("kafka-broker-api-versions", "2.8.0-3.9.0-rc3")),
            (_TOOLS + "BrokerApiVersionsCommand", "4.0.0", None,
             _read("kafka-broker-api-versions", f"{_TRUNK} (KAFKA-16324)", jars=_moved("4.0.0")))),
    *_tools("kafka-console-producer",
            (_CORE + "ConsoleProducer", "2.8.0", "4.0.0", _read("kafka-console-producer", "2.8.0-3.9.0-rc3")),
            (_TOOLS + "ConsoleProducer", "4.0.0", None,
             _read("kafka-console-producer", f"{_TRUNK} (KAFKA-14577)", jars=_moved("4.0.0"))), heap=_BIG),
    *_split("kafka-console-consumer", _CORE + "ConsoleConsumer", _TOOLS + "consumer.ConsoleConsumer",
            "3.8.0", "3.7.1", heap=_BIG),
    *_tools("kafka-producer-perf-test",
            (_TOOLS + "ProducerPerformance", "2.8.0", "4.2.0",
             _read("kafka-producer-perf-test", f"2.8.0-{_UNTIL_NOW}", jars="kafka-tools-4.0.0, 4.1.0.jar")),
            bootstrap=NONE, heap=_BIG),
    *_tools("kafka-producer-perf-test",
            (_TOOLS + "ProducerPerformance", "4.2.0", None,
             "the same script; ProducerPerformance of kafka-tools-4.2.0.jar on takes --bootstrap-server"), heap=_BIG),
    *_tools("kafka-get-offsets",
            (_CORE + "GetOffsetShell", "3.0.0", "3.7.0", _read("kafka-get-offsets", "3.0.0-3.6.2")),
            (_TOOLS + "GetOffsetShell", "3.7.0", None,
             _read("kafka-get-offsets", f"3.7.0-{_UNTIL_NOW}", jars=_TOOLS_4X))),
    *_tools("kafka-transactions",
            (_TOOLS + "TransactionsCommand", "3.0.0", None,
             _read("kafka-transactions", f"3.0.0-{_UNTIL_NOW}", jars=_TOOLS_4X))),
    *_tools("kafka-storage",
            (_CORE + "StorageTool", "2.8.0", None,
             _read("kafka-storage", f"2.8.0-{_UNTIL_NOW}", jars="kafka_2.13-4.0.0 to 4.4.0.jar hold it")),
            bootstrap=NONE),
    *_split("kafka-consumer-perf-test", _CORE + "ConsumerPerformance", _TOOLS + "ConsumerPerformance",
            "3.5.0", "3.4.1", heap=_BIG),
    *_split("kafka-delete-records", _ADMIN + "DeleteRecordsCommand", _TOOLS + "DeleteRecordsCommand",
            "3.6.0", "3.5.2"),
    *_split("kafka-log-dirs", _ADMIN + "LogDirsCommand", _TOOLS + "LogDirsCommand", "3.6.0", "3.5.2"),
    *_tools("kafka-dump-log",
            (_CORE + "DumpLogSegments", "2.8.0", "4.3.0",
             _read("kafka-dump-log", f"2.8.0-{_UNTIL_NOW}", jars="kafka_2.13-4.0.0 to 4.2.0.jar hold it")),
            (_TOOLS + "DumpLogSegments", "4.3.0", None, _moved("4.3.0")), bootstrap=NONE),
    *_split("kafka-cluster", _CORE + "ClusterTool", _TOOLS + "ClusterTool", "3.5.0", "3.4.1",
            bootstrap=AFTER_SUBCOMMAND),
    *_tools("kafka-verifiable-producer",
            (_TOOLS + "VerifiableProducer", "2.8.0", None,
             _read("kafka-verifiable-producer", f"2.8.0-{_UNTIL_NOW}", jars=_TOOLS_4X)), heap=_BIG),
    *_tools("kafka-verifiable-consumer",
            (_TOOLS + "VerifiableConsumer", "2.8.0", None,
             _read("kafka-verifiable-consumer", f"2.8.0-{_UNTIL_NOW}", jars=_TOOLS_4X)), heap=_BIG),
    *_split("kafka-delegation-tokens", _ADMIN + "DelegationTokenCommand", _TOOLS + "DelegationTokenCommand",
            "3.5.0", "3.4.1"),
    *_tools("kafka-client-metrics",
            (_TOOLS + "ClientMetricsCommand", "3.7.0", None,
             _read("kafka-client-metrics", f"3.7.0-{_UNTIL_NOW}", jars=_TOOLS_4X))),
])
"""Every script this harness can run, by release. The first release of the table is 2.8.0 (the oldest the harness
runs, docs/apache-kafka.md); a 4.x range that starts at x.y.0 was read from that release's jars."""


def tool_names() -> tuple[str, ...]:
    return tuple(sorted({t.name for t in TOOLS}))


def tool_name(name: str) -> str:
    """Script `name` as the table names it (`kafka-topics.sh`, `bin/kafka-topics.sh` -> `kafka-topics`); a
    ConfigError for a name the table lacks, with the nearest and every known one."""
    script = Path(name).name.removesuffix(".sh")
    if script not in tool_names():
        raise ConfigError(f"unknown Kafka tool {name!r}; {did_you_mean(script, tool_names())}")
    return script


def tool_for(name: str, release: str) -> Tool:
    """The table's entry for script `name` (`kafka-topics`, `kafka-topics.sh`) in Apache Kafka `release`."""
    script = tool_name(name)
    parsed = Release.parse(release)
    if parsed is None:
        raise ConfigError(f"Kafka release {release!r} is not a version (3.9.2)")
    found = [t for t in TOOLS if t.name == script and t.covers(parsed)]
    if not found:
        first = min((t for t in TOOLS if t.name == script), key=lambda t: Release.parse(t.since) or Release(0))
        raise ConfigError(f"{script} is not in Apache Kafka {release}: its script came in {first.since} "
                          f"({first.source})")
    return found[0]


def names_a_server(args: Sequence[str]) -> bool:
    """Whether a tool's arguments say where to connect (`SERVER_FLAGS`, also as `--flag=value`)."""
    return any(a.split("=", 1)[0] in SERVER_FLAGS for a in args)


def takes_bootstrap(name: str) -> bool:
    """Whether script `name` takes `--bootstrap-server` in some release."""
    return any(t.bootstrap != NONE for t in TOOLS if t.name == tool_name(name))


def with_bootstrap(tool: Tool, args: Sequence[str], bootstrap: str) -> list[str]:
    """`args` with `--bootstrap-server <bootstrap>` where `tool` takes one and `args` name no server."""
    if tool.bootstrap == NONE or not bootstrap or names_a_server(args):
        return list(args)
    if tool.bootstrap == AFTER_SUBCOMMAND and args and not args[0].startswith("-"):
        return [args[0], "--bootstrap-server", bootstrap, *args[1:]]
    return ["--bootstrap-server", bootstrap, *args]


def tool_argv(install: KafkaInstall, name: str, args: Sequence[str], *, java: str = "java",
              environ: Mapping[str, str] | None = None) -> list[str]:
    """The java command line of Kafka's script `name` of `install` with `args`, as `kafka-run-class.sh` builds
    it: `KAFKA_HEAP_OPTS` (else the script's heap), `KAFKA_JVM_PERFORMANCE_OPTS` (else a quick start: C1 and the
    serial collector, for a tool that runs for seconds), `KAFKA_OPTS`, the tools' logging, `-cp libs`."""
    env = os.environ if environ is None else environ
    tool = tool_for(name, install.version)
    heap = shlex.split(env.get("KAFKA_HEAP_OPTS") or tool.heap)
    perf = shlex.split(env.get("KAFKA_JVM_PERFORMANCE_OPTS")
                       or "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djava.awt.headless=true")
    log4j = install.tools_log4j
    logging = [] if log4j is None else [f"-Dlog4j.configuration=file:{log4j}" if install.major < 4
                                        else f"-Dlog4j2.configurationFile={log4j}"]
    return [java, *heap, *perf, *shlex.split(env.get("KAFKA_OPTS") or ""), *logging,
            "-cp", classpath(install.libs), tool.main, *args]


@dataclass(frozen=True, slots=True)
class RunTarget:
    """What a run directory recorded about its cluster: the release, the bootstrap address, run.json itself."""

    run_dir: Path
    release: str
    bootstrap: str
    info: Mapping[str, Any]
    client_properties: str = ""
    """A secured cluster's admin client properties (`cluster.json` `security.admin_properties`), for a tool's
    `--command-config` (or `--producer.config` / `--consumer.config`)."""

    @property
    def status(self) -> str:
        return str(self.info.get("status") or "unknown")


def _json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: not readable JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: not a JSON object")
    return data


def _field(doc: Mapping[str, Any] | None, dotted: str) -> str:
    value: Any = doc
    for key in dotted.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return str(value) if isinstance(value, str | int) and str(value) else ""


def read_run(run_dir: Path) -> RunTarget:
    """The release and bootstrap address run `run_dir` recorded: `run.json` `broker.version` (else the backend's
    `cluster/cluster.json` `flavour.version`), and `cluster/cluster.json` `bootstrap_servers` (written by the
    backend when the cluster came up; else run.json `cluster_info.bootstrap_servers`). A ConfigError names the
    file and field that are missing."""
    run_json = run_dir / "run.json"
    info = _json(run_json)
    if info is None:
        raise ConfigError(f"{run_dir} is not a run directory: {run_json} is missing")
    cluster_json = run_dir / "cluster" / "cluster.json"
    cluster = _json(cluster_json)
    release = _field(info, "broker.version") or _field(cluster, "flavour.version")
    if not release:
        raise ConfigError(f"{run_json}: broker.version is not recorded (status {info.get('status')!r}): the run "
                          f"never brought its cluster up, and {cluster_json} names no flavour.version either")
    bootstrap = _field(cluster, "bootstrap_servers") or _field(info, "cluster_info.bootstrap_servers")
    if not bootstrap:
        where = "is missing" if cluster is None else "has no bootstrap_servers"
        raise ConfigError(f"{cluster_json} {where}, and {run_json} has no cluster_info.bootstrap_servers: the "
                          "run recorded no bootstrap address")
    return RunTarget(run_dir, release, bootstrap, info, _field(cluster, "security.admin_properties"))


def bootstrap_of(run_dir: Path) -> str:
    """The bootstrap address (`host:port,...`) run `run_dir` recorded for its cluster (`read_run`)."""
    return read_run(run_dir).bootstrap
