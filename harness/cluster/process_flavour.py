"""Which broker the process backend runs, and how it is launched.

`cluster.broker` (or `--broker`): `apache-kafka` runs Apache Kafka `cluster.kafka` from `KAFKA_HOME` or
the cache (`harness.install.kafka`, installing it when missing) as `java -cp <libs jars> kafka.Kafka
server.properties`, which needs no `bin/` scripts (nor does `kafka.tools.StorageTool format`, which KRaft
nodes need first); ZooKeeper mode on 4.x (which removed it) is refused. `auto` is the same: Apache Kafka
wherever it is or can be installed, and an error naming every source tried where it cannot be (the reference
broker it once fell back to was retired; its bug flags' runs are kept under tests/data/recorded/reference-*).
The command lines are argv lists, never shell strings. Also: the Java and ZooKeeper versions reported in
`describe()`.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.cluster.base import BrokerFlavour
from harness.errors import ConfigError
from harness.install.kafka import (
    BROKERS,
    DEFAULT_KRAFT_LINE,
    DEFAULT_LINE,
    RETIRED_BROKER,
    KafkaInstall,
    cached_kafka,
    install_kafka,
    kafka_request,
)
from harness.install.kafka_files import classpath
from harness.model.releases import Release, has

DEFAULT_KAFKA_HEAP_OPTS = "-Xmx512M -Xms128M"
DEFAULT_KAFKA_JVM_OPTS = ("-server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 "
                          "-XX:+ExplicitGCInvokesConcurrent -Djava.awt.headless=true")
"""Kafka's own defaults in `kafka-run-class.sh` (heap: `kafka-server-start.sh` uses 1G; 3 brokers share 24 GiB here)."""


def zookeeper_mode_supported(version: str) -> bool:
    """ZooKeeper mode exists in Kafka 3.x and earlier; Kafka 4.0 removed it (`harness.model.releases`)."""
    return Release.parse(version) is not None and has(version, "zookeeper_mode")


def java_version(java: str) -> str:
    """`java -version`'s first line's version (e.g. `17.0.15`), or why it could not be read."""
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    text = out.stderr or out.stdout
    m = re.search(r'version "([^"]+)"', text)
    return m.group(1) if m else (text.splitlines()[0] if text else "unknown")


def zookeeper_jar_version(classpath: str) -> str:
    """The version in the `zookeeper-<v>.jar` name found on a classpath with `dir/*` entries."""
    for entry in classpath.split(":"):
        directory = Path(entry[:-2]) if entry.endswith("/*") else Path(entry).parent
        for jar in sorted(directory.glob("zookeeper-[0-9]*.jar")) if directory.is_dir() else []:
            m = re.match(r"^zookeeper-(\d+\.\d+\.\d+)\.jar$", jar.name)
            if m:
                return m.group(1)
    return "unknown"


@dataclass(frozen=True, slots=True)
class BrokerLauncher:
    """How to start one broker of the chosen flavour from its rendered `server.properties`, and why
    this flavour was chosen (`reason`, recorded in run.json)."""

    flavour: BrokerFlavour
    kafka: KafkaInstall
    java: str = "java"
    jvm: tuple[str, ...] = ()
    """Heap and JVM options of the Kafka process (`jvm_options`)."""
    reason: str = ""

    @property
    def advertises_controllers(self) -> bool:
        """Whether KRaft nodes of this release advertise controller listeners (Kafka 3.9+, KIP-853)."""
        return has(self.kafka.version, "kraft_controller_endpoints")

    def describe(self) -> str:
        return self.kafka.describe()

    def argv(self, properties: Path) -> list[str]:
        """Kafka: `java <heap> <jvm options> -cp libs/* kafka.Kafka server.properties`, with the node's
        `logs/` as `kafka.logs.dir` (what `kafka-server-start.sh` does, without its scripts)."""
        logs = properties.parent / "logs"
        log4j = self.kafka.log4j
        logging = (f"-Dlog4j.configuration=file:{log4j}" if self.kafka.major < 4
                   else f"-Dlog4j2.configurationFile={log4j}")
        return [self.java, *self.jvm, f"-Dkafka.logs.dir={logs}", logging,
                "-cp", classpath(self.kafka.libs), "kafka.Kafka", str(properties)]

    def tool_argv(self, logs: Path, *args: str) -> list[str]:
        """A Kafka tool (`kafka.tools.StorageTool format ...`) on a small heap, logging into `logs`."""
        log4j = self.kafka.log4j
        logging = (f"-Dlog4j.configuration=file:{log4j}" if self.kafka.major < 4
                   else f"-Dlog4j2.configurationFile={log4j}")
        return [self.java, "-Xmx256M", "-XX:TieredStopAtLevel=1", f"-Dkafka.logs.dir={logs}", logging,
                "-cp", classpath(self.kafka.libs), *args]

    def env(self, node_dir: Path, base: Mapping[str, str]) -> dict[str, str]:
        """The child's environment: `base` without `JMX_PORT` (one JMX port per broker would clash)."""
        env = dict(base)
        env.pop("JMX_PORT", None)
        return env


def jvm_options(environ: Mapping[str, str]) -> tuple[str, ...]:
    """`KAFKA_HEAP_OPTS` and `KAFKA_JVM_PERFORMANCE_OPTS` as Kafka's scripts read them, else their defaults."""
    heap = environ.get("KAFKA_HEAP_OPTS") or DEFAULT_KAFKA_HEAP_OPTS
    perf = environ.get("KAFKA_JVM_PERFORMANCE_OPTS") or DEFAULT_KAFKA_JVM_OPTS
    return (*shlex.split(heap), *shlex.split(perf))


def kafka_launcher(kafka: KafkaInstall, java: str, reason: str,
                   environ: Mapping[str, str] | None = None, *, mode: str = "zookeeper") -> BrokerLauncher:
    """Apache Kafka from `kafka`; ZooKeeper mode is refused for 4.x, which removed it."""
    if mode == "zookeeper" and not zookeeper_mode_supported(kafka.version):
        raise ConfigError(f"Apache Kafka {kafka.version} has no ZooKeeper mode (Kafka 4.0 removed it); "
                          "hint: cluster.mode: kraft, or cluster.kafka: \"3.9\"")
    return BrokerLauncher(BrokerFlavour("apache-kafka", kafka.version), kafka, java=java,
                          jvm=jvm_options(os.environ if environ is None else environ), reason=reason)


def select_launcher(environ: Mapping[str, str], *, broker: str = "auto", kafka: str = DEFAULT_LINE,
                    java: str = "java", progress: Callable[[str], None] | None = None,
                    mode: str = "zookeeper") -> BrokerLauncher:
    """Apache Kafka `kafka` (a release or a line) to run, installed into the cache when missing, or an error
    naming every source tried (`InstallError`); `auto` and `apache-kafka` are the same."""
    if broker not in BROKERS:
        raise ConfigError(f"unknown broker {broker!r}; choose one of {', '.join(BROKERS)}"
                          + (f" ({RETIRED_BROKER})" if broker == "reference" else ""))
    request = kafka_request(kafka)
    found = install_kafka(request, environ=environ, progress=progress)
    return kafka_launcher(found, java, f"{broker}: {found.describe()}", environ, mode=mode)


def switched_launcher(launcher: BrokerLauncher, release: str, environ: Mapping[str, str],
                      progress: Callable[[str], None] | None = None) -> BrokerLauncher:
    """`launcher` on Apache Kafka `release` (an upgrade's), with the same java and JVM options; installed into the
    cache when missing."""
    found = install_kafka(release, environ=environ, progress=progress)
    return dataclasses.replace(launcher, flavour=BrokerFlavour("apache-kafka", found.version), kafka=found,
                               reason=f"upgraded: {found.describe()}")


def planned_broker(environ: Mapping[str, str], kafka: str = DEFAULT_LINE) -> str:
    """What `auto` would run, without installing anything (for `available()` and `kafka list`)."""
    request = kafka_request(kafka)
    home = environ.get("KAFKA_HOME")
    if home:
        return f"Apache Kafka from KAFKA_HOME={home}"
    cached = cached_kafka(request, environ)
    if cached is not None:
        kraft = cached_kafka(DEFAULT_KRAFT_LINE, environ) if kafka == DEFAULT_LINE else None
        return cached.describe() + (f"; KRaft clusters: Apache Kafka {kraft.version}" if kraft else "")
    if shutil.which("mvn", path=environ.get("PATH")):
        return f"Apache Kafka {request}, to be installed from Maven Central"
    return f"Apache Kafka {request}, to be installed from the Apache archive (no KAFKA_HOME, no cache, no mvn)"


def find_java(environ: Mapping[str, str]) -> str | None:
    """`$JAVA_HOME/bin/java` when JAVA_HOME is set, else `java` on PATH."""
    home = environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java", path=environ.get("PATH"))
