"""The process backend's broker flavour choice and command lines (Apache Kafka at its seams: the
directories here are shaped like a Kafka install but hold empty jars; real Kafka runs in
tests/integration/process_backend/test_apache_kafka.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.cluster.process_backend import ProcessBackend
from harness.cluster.process_flavour import (
    DEFAULT_KAFKA_HEAP_OPTS,
    jvm_options,
    select_launcher,
    zookeeper_jar_version,
    zookeeper_mode_supported,
)
from harness.errors import ConfigError
from harness.install.kafka import InstallError
from harness.install.kafka_files import classpath


def _kafka_dir(tmp_path: Path, version: str = "3.7.1") -> Path:
    """A directory shaped like an unpacked kafka_2.13-<version> distribution (empty jars, no real Kafka)."""
    home = tmp_path / f"kafka_2.13-{version}"
    (home / "libs").mkdir(parents=True)
    (home / "config").mkdir()
    (home / "config" / "log4j.properties").write_text("log4j.rootLogger=INFO\n")
    for name in (f"kafka_2.13-{version}.jar", f"kafka_2.13-{version}-test.jar", f"kafka-clients-{version}.jar"):
        (home / "libs" / name).write_bytes(b"")
    return home


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No mvn on PATH and an empty cache: nothing can be installed unless a test says so."""
    return {"PATH": "/nonexistent", "KAFKA_CHAOS_CACHE": str(tmp_path / "cache"), **extra}


def test_kafka_home_runs_apache_kafka_as_java_kafka_Kafka_without_bin_scripts(tmp_path: Path) -> None:
    home = _kafka_dir(tmp_path)
    launcher = select_launcher(_env(tmp_path, KAFKA_HOME=str(home)), broker="apache-kafka", kafka="3.7",
                               java="/usr/bin/java")
    assert (launcher.flavour.name, launcher.flavour.version) == ("apache-kafka", "3.7.1")
    props = tmp_path / "broker-1" / "server.properties"
    argv = launcher.argv(props)
    assert argv[0] == "/usr/bin/java" and argv[-2:] == ["kafka.Kafka", str(props)]
    assert argv[argv.index("-cp") + 1].split(":") == [str(j) for j in sorted((home / "libs").glob("*.jar"))]
    assert f"-Dkafka.logs.dir={tmp_path / 'broker-1' / 'logs'}" in argv
    assert f"-Dlog4j.configuration=file:{home / 'config' / 'log4j.properties'}" in argv
    assert "-Xmx512M" in argv and "-XX:+UseG1GC" in argv
    env = launcher.env(tmp_path / "broker-1", {"PATH": "/usr/bin", "JMX_PORT": "9999"})
    assert "JMX_PORT" not in env
    assert launcher.describe().startswith("Apache Kafka 3.7.1 at ")


def test_the_classpath_leaves_out_the_slf4j_binding_that_does_not_fit_its_slf4j_api(tmp_path: Path) -> None:
    """Kafka 4.0-4.4 ship slf4j-api 1.7: log4j-slf4j2-impl beside it makes every Kafka 4 process fail to start."""
    libs = tmp_path / "libs"
    libs.mkdir()
    for name in ("slf4j-api-1.7.36.jar", "log4j-slf4j-impl-2.24.3.jar", "log4j-slf4j2-impl-2.24.3.jar",
                 "kafka_2.13-4.1.2.jar"):
        (libs / name).write_bytes(b"")
    names = [Path(p).name for p in classpath(libs).split(":")]
    assert "log4j-slf4j2-impl-2.24.3.jar" not in names and "log4j-slf4j-impl-2.24.3.jar" in names
    (libs / "slf4j-api-1.7.36.jar").rename(libs / "slf4j-api-2.0.16.jar")
    names = [Path(p).name for p in classpath(libs).split(":")]
    assert "log4j-slf4j-impl-2.24.3.jar" not in names and "log4j-slf4j2-impl-2.24.3.jar" in names


def test_user_heap_and_jvm_opts_win_over_the_defaults() -> None:
    assert jvm_options({"KAFKA_HEAP_OPTS": "-Xmx2G", "KAFKA_JVM_PERFORMANCE_OPTS": "-XX:+UseSerialGC"}) == (
        "-Xmx2G", "-XX:+UseSerialGC")
    assert jvm_options({})[:2] == tuple(DEFAULT_KAFKA_HEAP_OPTS.split())


def test_kafka_home_of_another_version_than_asked_is_not_used(tmp_path: Path) -> None:
    with pytest.raises(InstallError, match=r"KAFKA_HOME=.*holds Kafka 3\.7\.1, not 3\.9"):
        select_launcher(_env(tmp_path, KAFKA_HOME=str(_kafka_dir(tmp_path))), broker="apache-kafka", kafka="3.9")


def test_the_retired_reference_broker_is_refused_saying_what_to_write_instead(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"reference broker was retired; use apache-kafka"):
        select_launcher(_env(tmp_path), broker="reference")


def test_auto_without_any_source_of_apache_kafka_is_an_error_naming_every_source_that_failed(tmp_path: Path) -> None:
    with pytest.raises(InstallError) as info:
        select_launcher(_env(tmp_path, KAFKA_CHAOS_APACHE_MIRROR="http://127.0.0.1:9"), kafka="3.9.2")
    assert "tarball" in str(info.value) and "mvn" in str(info.value)


def test_kafka_4_is_refused_because_it_has_no_zookeeper_mode(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no ZooKeeper mode"):
        select_launcher(_env(tmp_path, KAFKA_HOME=str(_kafka_dir(tmp_path, "4.0.0"))), broker="apache-kafka",
                        kafka="4.0")
    assert zookeeper_mode_supported("3.9.1") and not zookeeper_mode_supported("4.1.0")


def test_available_reports_the_planned_broker_without_installing(tmp_path: Path) -> None:
    ok, reason = ProcessBackend({"PATH": "/nonexistent"}).available()
    assert not ok and "java" in reason
    java = shutil.which("java")
    if java is None:
        pytest.skip("no java on PATH")
    only_java = tmp_path / "bin"
    only_java.mkdir()
    (only_java / "java").symlink_to(java)
    ok, reason = ProcessBackend(_env(tmp_path, PATH=str(only_java))).available()
    assert ok, reason
    assert reason == "Apache Kafka 3.9, to be installed from the Apache archive (no KAFKA_HOME, no cache, no mvn)"
    home = _kafka_dir(tmp_path)
    ok, reason = ProcessBackend(_env(tmp_path, PATH="/usr/bin:/bin", KAFKA_HOME=str(home))).available()
    assert ok and reason == f"Apache Kafka from KAFKA_HOME={home}"


def test_zookeeper_version_is_read_from_the_classpath_jar(tmp_path: Path) -> None:
    (tmp_path / "zookeeper-3.9.5.jar").write_bytes(b"")
    (tmp_path / "zookeeper-jute-3.9.5.jar").write_bytes(b"")
    assert zookeeper_jar_version(f"/nonexistent/*:{tmp_path}/*") == "3.9.5"
