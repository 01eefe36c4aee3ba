"""The Java client worker, built once per client version into the cache: `java-client-<version>/`.

The worker's sources are the `.java` files of `harness/workload/java/` (package `kafkachaos`, handed in by the
workload layer). Its classpath
is the client release's own jars:
- when the cache holds an Apache Kafka install of that exact release (the broker's release, the default client),
  its `libs/` (kafka-clients and its dependencies, as Kafka's tarball ships them, with Kafka's logging binding);
- otherwise Maven fetches `org.apache.kafka:kafka-clients:<version>` with its runtime dependencies and the logging
  binding of that major version (the same pom as a Maven-built Kafka install: `kafka_files.pom`).

`javac` compiles the worker against that classpath into `worker-<sources digest>/`, so an edited worker is rebuilt
and a cached one is reused. Both steps hold a lock per version, so two test workers build it once. The worker logs
WARN and above to stderr (the harness's `clients.log`), through either log4j 1 (reload4j, Kafka 3.x) or log4j 2
(Kafka 4.x): both configurations are written, each runtime reads its own.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError
from harness.install.cache import cache_root, locked, read_manifest, write_manifest
from harness.install.kafka import cached_kafka
from harness.install.kafka_files import logging_dependencies, pom, runnable_jars
from harness.install.log4j import stderr_log4j1, stderr_log4j2

Progress = Callable[[str], None]
_RELEASE = re.compile(r"^(\d+)\.(\d+)\.(\d+)$")
OLDEST_CLIENT = (2, 8, 0)
"""The oldest kafka-clients the worker builds against (Maven Central serves Kafka from 2.8 on; the worker uses
only APIs of 2.8 and later)."""
WORKER_CLASS = "kafkachaos.Worker"

_LOG4J1 = stderr_log4j1("%p %m (%c)%n")
_LOG4J2 = stderr_log4j2("%p %m (%c)%n")


@dataclass(frozen=True, slots=True)
class JavaClient:
    """A built worker for one kafka-clients release: what `java` needs to run it."""

    version: str
    classes: Path
    libs: tuple[Path, ...]
    home: Path
    kind = "java"

    @property
    def classpath(self) -> str:
        return ":".join([str(self.classes), *(str(j) for j in self.libs)])

    def argv(self) -> list[str]:
        """The worker's command line."""
        return ["java", *self.java_args()]

    def env(self) -> None:
        """The worker inherits the harness's environment."""
        return None

    def java_args(self) -> list[str]:
        """The JVM options and class of the worker (its properties file is the one argument after these). A small
        heap, the serial collector and C1 only: a client worker starts in about a second and holds little."""
        return ["-Xmx256m", "-Xss512k", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
                f"-Dlog4j.configuration=file:{self.home / 'log4j.properties'}",
                f"-Dlog4j2.configurationFile={self.home / 'log4j2.properties'}",
                "-cp", self.classpath, WORKER_CLASS]


def check_client_version(version: str) -> str:
    """The release itself, or a ConfigError saying which versions the worker runs."""
    m = _RELEASE.match(version)
    if m is None:
        raise ConfigError(f"client_version {version!r} is not a kafka-clients release (for example 3.9.2)")
    if tuple(int(x) for x in m.groups()) < OLDEST_CLIENT:
        raise ConfigError(f"client_version {version!r} is older than 2.8.0, the oldest kafka-clients the Java "
                          "worker is built for")
    return version


def install_java_client(version: str, sources: Mapping[str, bytes], *, environ: Mapping[str, str] | None = None,
                        progress: Progress | None = None) -> JavaClient:
    """The worker (`sources`: file name -> text, the workload layer's `java/*.java`) built against kafka-clients
    `version`, from the cache or built now (raises ConfigError naming what failed: no `javac`/`mvn`, a version Maven
    does not serve, a compile error)."""
    env = dict(os.environ if environ is None else environ)
    say = progress or (lambda _text: None)
    check_client_version(version)
    digest = hashlib.sha256(b"".join(name.encode() + b"\0" + text + b"\0"
                                     for name, text in sorted(sources.items()))).hexdigest()[:12]
    root = cache_root(env)
    home = root / f"java-client-{version}"
    home.mkdir(parents=True, exist_ok=True)
    with locked(root / f".java-client-{version}.lock"):
        libs = _libs(version, home, env, say)
        classes = home / f"worker-{digest}"
        if read_manifest(classes) is None:
            _compile(sources, classes, libs, env, say, version)
        (home / "log4j.properties").write_text(_LOG4J1, encoding="utf-8")
        (home / "log4j2.properties").write_text(_LOG4J2, encoding="utf-8")
    return JavaClient(version=version, classes=classes, libs=tuple(libs), home=home)


def _libs(version: str, home: Path, env: Mapping[str, str], say: Progress) -> list[Path]:
    kafka = cached_kafka(version, env)
    if kafka is not None and kafka.version == version:
        return runnable_jars(kafka.libs)
    libs = home / "libs"
    if read_manifest(libs) is None:
        _fetch(version, libs, env, say)
    return runnable_jars(libs)


def _fetch(version: str, libs: Path, env: Mapping[str, str], say: Progress) -> None:
    mvn = shutil.which("mvn", path=env.get("PATH"))
    if mvn is None:
        raise ConfigError(f"kafka-clients {version}: no `mvn` on PATH to fetch it (apt-get install maven)")
    shutil.rmtree(libs, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=".mvn-", dir=libs.parent) as work:
        pom_path = Path(work) / "pom.xml"
        pom_path.write_text(pom(f"org.apache.kafka:kafka-clients:{version}",
                                logging_dependencies(int(version.split(".", 1)[0]))), encoding="utf-8")
        argv = [mvn, "-B", "-q", "-f", str(pom_path), "dependency:copy-dependencies", f"-DoutputDirectory={libs}",
                "-DincludeScope=runtime"]
        if env.get("KAFKA_CHAOS_MAVEN_SETTINGS"):
            argv += ["-s", env["KAFKA_CHAOS_MAVEN_SETTINGS"]]
        say(f"kafka-clients {version}: mvn dependency:copy-dependencies")
        done = subprocess.run(argv, capture_output=True, text=True, env=dict(env), cwd=work, check=False)
    if done.returncode != 0:
        errors = [ln.strip() for ln in (done.stdout + done.stderr).splitlines() if "[ERROR]" in ln][:4]
        raise ConfigError(f"kafka-clients {version}: mvn exited {done.returncode}: "
                          + (" | ".join(errors) or "no [ERROR] line"))
    write_manifest(libs, {"artifact": f"org.apache.kafka:kafka-clients:{version}",
                          "jars": sorted(p.name for p in libs.glob("*.jar"))})


def _compile(sources: Mapping[str, bytes], classes: Path, libs: list[Path], env: Mapping[str, str], say: Progress,
             version: str) -> None:
    javac = shutil.which("javac", path=env.get("PATH"))
    if javac is None:
        raise ConfigError("no `javac` on PATH to build the Java client worker (apt-get install default-jdk-headless)")
    say(f"kafka-clients {version}: compiling the Java client worker")
    shutil.rmtree(classes, ignore_errors=True)
    with tempfile.TemporaryDirectory(prefix=".javac-", dir=classes.parent) as work:
        files = []
        for name, text in sorted(sources.items()):
            (Path(work) / name).write_bytes(text)
            files.append(str(Path(work) / name))
        out = Path(work) / "classes"
        done = subprocess.run([javac, "-nowarn", "-Xlint:none", "-d", str(out), "-cp",
                               ":".join(str(j) for j in libs), *files],
                              capture_output=True, text=True, env=dict(env), check=False)
        if done.returncode != 0:
            raise ConfigError(f"the Java client worker does not compile against kafka-clients {version}: "
                              + (done.stderr.strip() or done.stdout.strip())[-2000:])
        write_manifest(out, {"kafka_clients": version})
        out.rename(classes)
