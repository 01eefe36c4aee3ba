"""Apache Kafka in the per-user cache: `install_kafka()` and `installed_kafkas()`.

A request is an exact version (`3.9.2`) or a line (`3.9`: its newest release; `4`: the newest 4.x). Sources, tried in
this order, the first that works wins; when all fail, one `InstallError` names each and why:

1. `KAFKA_HOME`, when set and of the requested version: used in place, nothing is copied.
2. The Apache release tarball (`kafka_2.13-<v>.tgz`), where the internet is reachable, its
   SHA-512 checked against the `.sha512` file published beside it (`KAFKA_CHAOS_APACHE_MIRROR`
   overrides the base address).
3. Maven Central through `mvn dependency:copy-dependencies` of a generated pom (`kafka_2.13`, the
   logging binding its distribution ships, and `kafka-tools`), so the user's `~/.m2/settings.xml` (a company
   mirror) applies; `KAFKA_CHAOS_MAVEN_SETTINGS` names another settings file.

An install is `<cache>/kafka-<version>/` with `libs/*.jar`, `config/` (a log4j configuration that
writes `server.log`, `controller.log` and `state-change.log` into `${kafka.logs.dir}`, as Kafka's own
does, and one for the command-line tools: warnings to stderr) and `installed.json`, written last. A line
request is answered from the cache when an install of that line exists, so a machine without network keeps
working once it has one.

Kafka's command-line tools (`kafka-topics.sh` and the rest, `harness.kafka_tools`) need `kafka-tools` and its
runtime dependencies beside the broker's jars, as the release tarball's `libs/` has them. A fresh install fetches
them; `ensure_tools()` adds them to an install made before (the jars it lacks; a jar of an artifact the install
holds in another version is left out, so the broker's classpath keeps its versions) and records `tools` in
`installed.json`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from harness.errors import ConfigError
from harness.install.cache import cache_root, locked, read_manifest, write_manifest
from harness.install.kafka_files import LOG4J1_PROPERTIES, LOG4J2_PROPERTIES, logging_dependencies, pom
from harness.install.log4j import stderr_log4j1, stderr_log4j2

SCALA = "2.13"
BROKERS = ("auto", "apache-kafka")
"""`cluster.broker` / `--broker`: which broker runs (`harness.cluster.process_flavour`); both are Apache Kafka."""
RETIRED_BROKER = ("the reference broker was retired; use apache-kafka (a planted bug's history is kept under "
                  "tests/data/recorded/reference-*)")
"""What `broker: reference` (or `--broker reference`, `reference_bugs:`) is told now."""
DEFAULT_LINE = "3.9"
"""The newest line with ZooKeeper mode (Kafka 4.0 removed it): the default of a ZooKeeper-mode cluster."""
DEFAULT_KRAFT_LINE = "4"
"""The default of a KRaft cluster: the newest Kafka 4.x (the cache's newest once one is installed)."""
APACHE_MIRROR = "https://archive.apache.org/dist/kafka"
_VERSION = re.compile(r"^\d+(\.\d+){0,2}$")
_KAFKA_JAR = re.compile(r"^kafka_(?P<scala>\d+\.\d+)-(?P<version>\d+\.\d+\.\d+)\.jar$")

_ARTIFACT = re.compile(r"^(?P<artifact>.+?)-\d")
"""The artifact of a jar's file name: what comes before the first `-<digit>` (`jackson-core-2.16.2.jar`)."""
_TOOLS_COMMENT = "kafka-chaos: Kafka's command-line tools log warnings and errors to stderr; their output keeps stdout."
TOOLS_LOG4J1 = stderr_log4j1("[%d] %p %m (%c)%n", _TOOLS_COMMENT)
TOOLS_LOG4J2 = stderr_log4j2("[%d] %p %m (%c)%n", _TOOLS_COMMENT)
"""What Kafka's `config/tools-log4j.properties` (3.x) and `config/tools-log4j2.yaml` (4.x) do: WARN to stderr."""

Progress = Callable[[str], None]


class InstallError(ConfigError):
    """No source could provide the requested Kafka; the message names every source tried and why."""


@dataclass(frozen=True, slots=True)
class KafkaInstall:
    """A runnable Apache Kafka: `libs/` for the classpath and `log4j` for its logging configuration."""

    home: Path
    version: str
    source: str
    log4j: Path

    @property
    def libs(self) -> Path:
        return self.home / "libs"

    @property
    def major(self) -> int:
        return int(self.version.split(".", 1)[0])

    @property
    def tools_jar(self) -> Path:
        """`libs/kafka-tools-<version>.jar`: present when Kafka's command-line tools can run."""
        return self.libs / f"kafka-tools-{self.version}.jar"

    @property
    def has_tools(self) -> bool:
        return self.tools_jar.is_file()

    @property
    def tools_log4j(self) -> Path | None:
        """The tools' logging configuration: the harness's, else a distribution's own, else None."""
        config = self.home / "config"
        names = (_tools_log4j_name(self.major), "tools-log4j.properties", "tools-log4j2.yaml",
                 "tools-log4j2.properties")
        return next((config / n for n in names if (config / n).is_file()), None)

    def describe(self) -> str:
        return f"Apache Kafka {self.version} at {self.home} (from {self.source})"


def _tools_log4j_name(major: int) -> str:
    return "kafka-chaos-tools-log4j.properties" if major < 4 else "kafka-chaos-tools-log4j2.properties"


def check_request(version: str) -> str:
    """The request itself, or a ConfigError saying what a version looks like."""
    if not _VERSION.match(version):
        raise ConfigError(f"Kafka version {version!r} is neither a release (3.9.2) nor a line (3.9, or 4)")
    return version


def kafka_request(kafka: str) -> str:
    """The Apache Kafka release or line that `cluster.kafka` asks for. A Confluent Platform 7.x version
    (the containers' published images) means its Apache Kafka line: CP 7.m ships Kafka 3.m."""
    check = kafka.strip()
    parts = check.split(".")
    if len(parts) >= 2 and parts[0] == "7" and parts[1].isdigit():
        return f"3.{parts[1]}"
    return check_request(check)


def matches(version: str, request: str) -> bool:
    """Whether release `version` answers `request` (the same release, or a release of that line)."""
    return version == request or (version.startswith(request + ".") and request.count(".") <= 1)


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in version.split("."))


def jar_version(libs: Path) -> str:
    """The Kafka release of a `libs/` directory, read from its `kafka_<scala>-<v>.jar`."""
    found = sorted({m.group("version") for p in (libs.glob("kafka_*.jar") if libs.is_dir() else [])
                    if (m := _KAFKA_JAR.match(p.name))})
    if len(found) != 1:
        raise ConfigError(f"{libs}: cannot tell the Kafka release from kafka_<scala>-<version>.jar "
                          f"(found {found or 'none'})")
    return found[0]


def _from_home(home: Path, source: str) -> KafkaInstall:
    version = jar_version(home / "libs")
    manifest = read_manifest(home) or {}
    log4j_name = str(manifest.get("log4j") or "")
    candidates = [home / log4j_name] if log4j_name else []
    candidates += [home / "config" / n for n in ("log4j.properties", "log4j2.yaml", "log4j2.properties")]
    log4j = next((c for c in candidates if c.is_file()), candidates[-1])
    return KafkaInstall(home=home, version=version, source=str(manifest.get("source") or source), log4j=log4j)


def installed_kafkas(environ: Mapping[str, str] | None = None) -> list[KafkaInstall]:
    """Finished installs in the cache, oldest release first."""
    root = cache_root(environ)
    found = [_from_home(d, "cache") for d in sorted(root.glob("kafka-*")) if read_manifest(d) is not None]
    return sorted(found, key=lambda k: _key(k.version))


def cached_kafka(request: str, environ: Mapping[str, str] | None = None) -> KafkaInstall | None:
    """The newest cached install answering `request`, without asking any source."""
    hits = [k for k in installed_kafkas(environ) if matches(k.version, request)]
    return hits[-1] if hits else None


def install_kafka(request: str = DEFAULT_LINE, *, environ: Mapping[str, str] | None = None,
                  progress: Progress | None = None) -> KafkaInstall:
    """A runnable Kafka answering `request`: `KAFKA_HOME`, the cache, or a fresh install into the cache."""
    env = dict(os.environ if environ is None else environ)
    say = progress or (lambda _text: None)
    check_request(request)
    failures: list[str] = []
    home = env.get("KAFKA_HOME")
    if home:
        try:
            found = _from_home(Path(home), "KAFKA_HOME")
        except ConfigError as exc:
            failures.append(f"KAFKA_HOME={home}: {exc}")
        else:
            if matches(found.version, request):
                return found
            failures.append(f"KAFKA_HOME={home}: it holds Kafka {found.version}, not {request}")
    cached = cached_kafka(request, env)
    if cached is not None:
        return cached
    root = cache_root(env)
    root.mkdir(parents=True, exist_ok=True)
    for name, fetch in (("the Apache release tarball", _from_tarball), ("Maven Central (mvn)", _from_maven)):
        say(f"kafka {request}: trying {name}")
        staging = Path(tempfile.mkdtemp(prefix=".staging-kafka-", dir=root))
        try:
            version, source = fetch(request, staging, env, say)
            return _finish(staging, root, version, source, say)
        except (OSError, ConfigError, subprocess.SubprocessError) as exc:
            failures.append(f"{name}: {exc}")
            say(f"kafka {request}: {name} failed: {exc}")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    raise InstallError(f"could not install Apache Kafka {request}; tried:\n  - " + "\n  - ".join(failures)
                       + "\nhint: set KAFKA_HOME to an unpacked kafka_2.13 distribution, or make Maven "
                       "Central reachable (a mirror in ~/.m2/settings.xml)")


def _finish(staging: Path, root: Path, version: str, source: str, say: Progress) -> KafkaInstall:
    """Complete the staged install and move it into place atomically; a concurrent twin wins quietly."""
    home = staging / "kafka"
    major = int(version.split(".", 1)[0])
    config = home / "config"
    config.mkdir(parents=True, exist_ok=True)
    log4j_name = "config/kafka-chaos-log4j.properties" if major < 4 else "config/kafka-chaos-log4j2.properties"
    (home / log4j_name).write_text(LOG4J1_PROPERTIES if major < 4 else LOG4J2_PROPERTIES, encoding="utf-8")
    (config / _tools_log4j_name(major)).write_text(TOOLS_LOG4J1 if major < 4 else TOOLS_LOG4J2, encoding="utf-8")
    jars = sorted(p.name for p in (home / "libs").glob("*.jar"))
    manifest: dict[str, object] = {"version": version, "scala": SCALA, "source": source, "log4j": log4j_name,
                                   "jars": len(jars)}
    if f"kafka-tools-{version}.jar" in jars:
        manifest["tools"] = _tools_coordinate(version)
    write_manifest(home, manifest)
    target = root / f"kafka-{version}"
    try:
        home.rename(target)
    except OSError:
        if read_manifest(target) is None:
            raise
    say(f"kafka {version}: installed at {target} ({len(jars)} jars, from {source})")
    return _from_home(target, source)


def _from_tarball(request: str, staging: Path, env: Mapping[str, str], say: Progress) -> tuple[str, str]:
    if request.count(".") != 2:
        raise ConfigError(f"the tarball needs an exact release, not the line {request!r} (its newest is "
                          "not known without a listing)")
    base = env.get("KAFKA_CHAOS_APACHE_MIRROR", APACHE_MIRROR).rstrip("/")
    name = f"kafka_{SCALA}-{request}.tgz"
    url = f"{base}/{request}/{name}"
    timeout = float(env.get("KAFKA_CHAOS_DOWNLOAD_TIMEOUT", "10"))
    with urllib.request.urlopen(url + ".sha512", timeout=timeout) as resp:
        expected = _parse_sha512(resp.read().decode("ascii", "replace"))
    tgz = staging / name
    digest = hashlib.sha512()
    say(f"kafka {request}: downloading {url}")
    with urllib.request.urlopen(url, timeout=timeout) as resp, tgz.open("wb") as out:
        while chunk := resp.read(1 << 20):
            digest.update(chunk)
            out.write(chunk)
    if digest.hexdigest() != expected:
        raise ConfigError(f"{url}: SHA-512 {digest.hexdigest()[:16]}… does not match the published "
                          f"{expected[:16]}…")
    with tarfile.open(tgz) as tar:
        tar.extractall(staging, filter="data")
    (staging / f"kafka_{SCALA}-{request}").rename(staging / "kafka")
    tgz.unlink()
    return jar_version(staging / "kafka" / "libs"), f"{url} (SHA-512 checked)"


def _parse_sha512(text: str) -> str:
    """The digest in an Apache `.sha512` file: gpg's `name: ABCD 1234 …` (folded) or `sha512sum`'s `hex  name`."""
    words = text.split() or [""]
    gpg = words[0].endswith(":")
    hexes = ("".join(words[1:]) if gpg else words[0]).lower()
    if not re.fullmatch(r"[0-9a-f]{128}", hexes):
        raise ConfigError(f"cannot read a SHA-512 digest from {text[:80]!r}")
    return hexes


def _from_maven(request: str, staging: Path, env: Mapping[str, str], say: Progress) -> tuple[str, str]:
    major = int(request.split(".", 1)[0])
    spec = request if request.count(".") == 2 else f"[{request}.0,{request}.9999]"
    libs = staging / "kafka" / "libs"
    text = pom(f"org.apache.kafka:kafka_{SCALA}:{spec}", (*logging_dependencies(major), _tools_coordinate(spec)))
    say(f"kafka {request}: mvn dependency:copy-dependencies of kafka_{SCALA} and kafka-tools {spec} "
        "(about 105 jars, 56 MB)")
    _mvn_copy(text, staging, libs, env, lambda n: say(f"kafka {request}: {n} files downloaded"))
    version = jar_version(libs)
    if not (libs / f"kafka-tools-{version}.jar").is_file():
        raise ConfigError(f"Maven resolved kafka_{SCALA} {version} but not kafka-tools {version} "
                          f"(found {sorted(p.name for p in libs.glob('kafka-tools-*.jar')) or 'none'})")
    return version, f"Maven Central via mvn (org.apache.kafka:kafka_{SCALA}:{version})"


def _tools_coordinate(version: str) -> str:
    return f"org.apache.kafka:kafka-tools:{version}"


def _mvn_copy(pom_text: str, staging: Path, libs: Path, env: Mapping[str, str], downloaded: Progress) -> None:
    """`mvn dependency:copy-dependencies` of the project `pom_text` (runtime scope) into `libs`; its output goes to
    `staging/mvn.log`, and every 20th download is told to `downloaded`. A ConfigError quotes mvn's errors."""
    mvn = shutil.which("mvn", path=env.get("PATH"))
    if mvn is None:
        raise ConfigError("no `mvn` on PATH (apt-get install maven)")
    (staging / "pom.xml").write_text(pom_text, encoding="utf-8")
    argv = [mvn, "-B", "-f", str(staging / "pom.xml"), "dependency:copy-dependencies",
            f"-DoutputDirectory={libs}", "-DincludeScope=runtime"]
    if env.get("KAFKA_CHAOS_MAVEN_SETTINGS"):
        argv += ["-s", env["KAFKA_CHAOS_MAVEN_SETTINGS"]]
    log = staging / "mvn.log"
    with log.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                env=dict(env), cwd=staging)
        assert proc.stdout is not None
        count = 0
        for line in proc.stdout:
            out.write(line)
            if line.startswith("Downloaded from"):
                count += 1
                if count % 20 == 0:
                    downloaded(str(count))
        rc = proc.wait()
    if rc != 0:
        errors = [ln for ln in log.read_text(encoding="utf-8").splitlines() if "[ERROR]" in ln][:6]
        raise ConfigError(f"mvn exited {rc}: " + (" | ".join(e.strip() for e in errors) or "no [ERROR] line"))


def ensure_tools(kafka: KafkaInstall, *, environ: Mapping[str, str] | None = None,
                 progress: Progress | None = None) -> KafkaInstall:
    """`kafka` with Kafka's command-line tools: as it is when `libs/` holds `kafka-tools`; for an install in the
    cache made without them, `kafka-tools` and its runtime dependencies fetched from Maven Central into `libs/`
    (jars already there are kept, and so is the broker's version of an artifact both need), once, under a lock.
    An install elsewhere (`KAFKA_HOME`) is never changed: an InstallError says what it lacks."""
    env = dict(os.environ if environ is None else environ)
    say = progress or (lambda _text: None)
    root = cache_root(env)
    in_cache = kafka.home.parent.resolve() == root.resolve()
    if kafka.has_tools:
        if in_cache and kafka.tools_log4j is None:
            _write_tools_log4j(kafka)
        return kafka
    coordinate = _tools_coordinate(kafka.version)
    if not in_cache:
        raise InstallError(f"{kafka.home} ({kafka.source}) has no libs/{kafka.tools_jar.name}, which Kafka's "
                           f"command-line tools need; hint: a release tarball's libs/ has it, or unset KAFKA_HOME "
                           f"to use the cache (the tools are fetched into it)")
    root.mkdir(parents=True, exist_ok=True)
    with locked(root / f".kafka-{kafka.version}.tools.lock"):
        if kafka.has_tools:  # a twin process added them meanwhile
            return _from_home(kafka.home, kafka.source)
        say(f"kafka {kafka.version}: {kafka.home} has no command-line tools; adding {coordinate} and its runtime "
            "dependencies from Maven Central (once, about 50 jars)")
        staging = Path(tempfile.mkdtemp(prefix=".staging-tools-", dir=root))
        try:
            text = pom(f"org.apache.kafka:kafka_{SCALA}:{kafka.version}",
                       (*logging_dependencies(kafka.major), coordinate))
            _mvn_copy(text, staging, staging / "libs", env,
                      lambda n: say(f"kafka {kafka.version}: {n} files downloaded"))
            added, kept = _merge_jars(staging / "libs", kafka.libs)
        except (OSError, ConfigError, subprocess.SubprocessError) as exc:
            raise InstallError(f"could not add Kafka's command-line tools to {kafka.home}; tried Maven Central "
                               f"(mvn) for {coordinate}: {exc}\nhint: make Maven Central reachable (a mirror in "
                               "~/.m2/settings.xml, or KAFKA_CHAOS_MAVEN_SETTINGS), or set KAFKA_HOME to an unpacked "
                               f"kafka_{SCALA}-{kafka.version} distribution") from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        _write_tools_log4j(kafka)
        manifest = read_manifest(kafka.home) or {}
        write_manifest(kafka.home, {**manifest, "tools": coordinate,
                                    "jars": len(list(kafka.libs.glob("*.jar")))})
    say(f"kafka {kafka.version}: added {len(added)} jars for the tools"
        + (f" (kept the broker's {', '.join(kept)})" if kept else ""))
    return _from_home(kafka.home, kafka.source)


def _write_tools_log4j(kafka: KafkaInstall) -> None:
    path = kafka.home / "config" / _tools_log4j_name(kafka.major)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(TOOLS_LOG4J1 if kafka.major < 4 else TOOLS_LOG4J2, encoding="utf-8")
    tmp.replace(path)


def _artifact(jar: str) -> str:
    m = _ARTIFACT.match(jar)
    return m.group("artifact") if m else jar


def _merge_jars(staged: Path, libs: Path) -> tuple[list[str], list[str]]:
    """Copy the jars of `staged` that `libs` lacks into it (each whole, by a rename); a jar whose artifact `libs`
    holds in another version is left out. Returns (added, kept: the libs jars that won such a clash)."""
    have = {p.name for p in libs.glob("*.jar")}
    by_artifact = {_artifact(name): name for name in sorted(have)}
    added: list[str] = []
    kept: list[str] = []
    for jar in sorted(staged.glob("*.jar")):
        if jar.name in have:
            continue
        other = by_artifact.get(_artifact(jar.name))
        if other is not None:
            kept.append(f"{other} over {jar.name}")
            continue
        part = libs / f".{jar.name}.part"
        shutil.copyfile(jar, part)
        part.replace(libs / jar.name)
        added.append(jar.name)
    return added, kept
