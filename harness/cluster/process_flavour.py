"""Which broker the process backend runs, and how it is launched.

Apache Kafka when `KAFKA_HOME` names a 3.x distribution (`bin/kafka-server-start.sh
server.properties`, Kafka's documented start script; 4.x has no ZooKeeper mode and is refused),
otherwise the reference broker (`python -m harness.broker --config server.properties`). Both get
the same rendered `server.properties`; the command lines are argv lists, never shell strings.
Also: the Java and ZooKeeper versions reported in `describe()`.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import harness
from harness.cluster.base import BrokerFlavour
from harness.errors import ConfigError

_KAFKA_JAR = re.compile(r"^kafka_(?P<scala>\d+\.\d+)-(?P<version>\d+\.\d+\.\d+[^/]*?)\.jar$")
_NOT_MAIN_JAR = ("-sources", "-javadoc", "-test", "-scaladoc", "-site-docs")
DEFAULT_KAFKA_HEAP_OPTS = "-Xmx512M -Xms128M"


def kafka_version(kafka_home: Path) -> str:
    """The Kafka version of a distribution, from `libs/kafka_<scala>-<version>.jar`."""
    libs = kafka_home / "libs"
    if not (kafka_home / "bin" / "kafka-server-start.sh").is_file():
        raise ConfigError(f"KAFKA_HOME={kafka_home}: no bin/kafka-server-start.sh; "
                          "hint: point KAFKA_HOME at an unpacked kafka_2.13-3.x distribution")
    versions = sorted({m.group("version") for p in (libs.glob("kafka_*.jar") if libs.is_dir() else [])
                       if (m := _KAFKA_JAR.match(p.name)) and not p.stem.endswith(_NOT_MAIN_JAR)})
    if len(versions) != 1:
        raise ConfigError(f"KAFKA_HOME={kafka_home}: cannot tell the Kafka version from libs/kafka_*.jar "
                          f"(found {versions or 'none'})")
    return versions[0]


def zookeeper_mode_supported(version: str) -> bool:
    """ZooKeeper mode exists in Kafka 3.x and earlier; Kafka 4.0 removed it."""
    try:
        major = int(version.split(".", 1)[0])
    except ValueError:
        return False
    return major < 4


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


def reference_version() -> str:
    try:
        return importlib.metadata.version("kafka-chaos")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True, slots=True)
class BrokerLauncher:
    """How to start one broker of the chosen flavour from its rendered `server.properties`."""

    flavour: BrokerFlavour
    kafka_home: Path | None = None
    python: str = sys.executable

    def describe(self) -> str:
        if self.kafka_home is not None:
            return f"KAFKA_HOME={self.kafka_home} (Apache Kafka {self.flavour.version})"
        return "reference broker (no KAFKA_HOME)"

    def argv(self, properties: Path) -> list[str]:
        if self.kafka_home is not None:
            return [str(self.kafka_home / "bin" / "kafka-server-start.sh"), str(properties)]
        return [self.python, "-m", "harness.broker", "--config", str(properties)]

    def env(self, node_dir: Path, base: Mapping[str, str]) -> dict[str, str]:
        """The child's environment: `base` plus where Kafka writes its logs, or the harness on PYTHONPATH."""
        env = dict(base)
        if self.kafka_home is not None:
            env["LOG_DIR"] = str(node_dir / "logs")  # kafka-run-class.sh: server.log, controller.log, gc log
            env.setdefault("KAFKA_HEAP_OPTS", DEFAULT_KAFKA_HEAP_OPTS)
            env.pop("JMX_PORT", None)  # one JMX port per broker would clash; not needed
        else:
            root = str(Path(harness.__file__).resolve().parent.parent)
            old = env.get("PYTHONPATH")
            env["PYTHONPATH"] = root if not old else root + ":" + old
            env["PYTHONUNBUFFERED"] = "1"
        return env


def select_launcher(environ: Mapping[str, str], reference_bugs: tuple[str, ...] = ()) -> BrokerLauncher:
    """Apache Kafka from `KAFKA_HOME` when set (must be 3.x), else the reference broker."""
    home = environ.get("KAFKA_HOME")
    if home:
        if reference_bugs:
            raise ConfigError(f"reference_bugs {list(reference_bugs)} only apply to the reference broker, "
                              f"but KAFKA_HOME={home} selects Apache Kafka; unset KAFKA_HOME or drop them")
        path = Path(home)
        version = kafka_version(path)
        if not zookeeper_mode_supported(version):
            raise ConfigError(f"KAFKA_HOME={home} is Apache Kafka {version}, which has no ZooKeeper mode; "
                              "hint: use a 3.x distribution")
        return BrokerLauncher(BrokerFlavour("apache-kafka", version), path)
    return BrokerLauncher(BrokerFlavour("reference", reference_version(), tuple(reference_bugs)))


def find_java(environ: Mapping[str, str]) -> str | None:
    """`$JAVA_HOME/bin/java` when JAVA_HOME is set, else `java` on PATH."""
    home = environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return str(Path(home) / "bin" / "java")
    return shutil.which("java", path=environ.get("PATH"))
