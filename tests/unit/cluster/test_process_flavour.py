"""The process backend's broker flavour choice and command lines (Apache Kafka at its seams)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.cluster.process import ProcessBackend
from harness.cluster.process_flavour import (
    kafka_version,
    select_launcher,
    zookeeper_jar_version,
    zookeeper_mode_supported,
)
from harness.errors import ConfigError


def _fake_kafka_home(tmp_path: Path, version: str = "3.7.1") -> Path:
    """A directory shaped like an unpacked kafka_2.13-<version> distribution (no real Kafka in it)."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "libs").mkdir()
    (tmp_path / "bin" / "kafka-server-start.sh").write_text("#!/bin/sh\n")
    for name in (f"kafka_2.13-{version}.jar", f"kafka_2.13-{version}-test.jar", f"kafka-clients-{version}.jar"):
        (tmp_path / "libs" / name).write_bytes(b"")
    return tmp_path


def test_kafka_home_selects_apache_kafka_started_by_its_start_script(tmp_path: Path) -> None:
    home = _fake_kafka_home(tmp_path)
    launcher = select_launcher({"KAFKA_HOME": str(home)})
    assert launcher.flavour.name == "apache-kafka"
    assert launcher.flavour.version == "3.7.1"
    props = tmp_path / "broker-1" / "server.properties"
    assert launcher.argv(props) == [str(home / "bin" / "kafka-server-start.sh"), str(props)]
    env = launcher.env(tmp_path / "broker-1", {"PATH": "/usr/bin", "JMX_PORT": "9999"})
    assert env["LOG_DIR"] == str(tmp_path / "broker-1" / "logs")
    assert env["KAFKA_HEAP_OPTS"].startswith("-Xmx")
    assert "JMX_PORT" not in env
    assert launcher.describe() == f"KAFKA_HOME={home} (Apache Kafka 3.7.1)"


def test_user_heap_opts_win_over_the_default(tmp_path: Path) -> None:
    launcher = select_launcher({"KAFKA_HOME": str(_fake_kafka_home(tmp_path))})
    assert launcher.env(tmp_path, {"KAFKA_HEAP_OPTS": "-Xmx2G"})["KAFKA_HEAP_OPTS"] == "-Xmx2G"


def test_without_kafka_home_the_reference_broker_runs_from_the_same_properties(tmp_path: Path) -> None:
    launcher = select_launcher({}, ("ack_before_replication",))
    assert launcher.flavour.name == "reference"
    assert launcher.flavour.bugs == ("ack_before_replication",)
    props = tmp_path / "server.properties"
    assert launcher.argv(props) == [sys.executable, "-m", "harness.broker", "--config", str(props)]
    assert launcher.describe() == "reference broker (no KAFKA_HOME)"
    assert "PYTHONPATH" in launcher.env(tmp_path, {})


def test_reference_bugs_with_kafka_home_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="reference_bugs"):
        select_launcher({"KAFKA_HOME": str(_fake_kafka_home(tmp_path))}, ("unclean_election",))


def test_kafka_4_is_refused_because_it_has_no_zookeeper_mode(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no ZooKeeper mode"):
        select_launcher({"KAFKA_HOME": str(_fake_kafka_home(tmp_path, "4.0.0"))})
    assert zookeeper_mode_supported("3.9.1") and not zookeeper_mode_supported("4.1.0")


def test_kafka_home_without_start_script_names_the_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"kafka-server-start\.sh"):
        kafka_version(tmp_path)


def test_available_reports_the_flavour_or_why_not(tmp_path: Path) -> None:
    ok, reason = ProcessBackend({"PATH": "/nonexistent"}).available()
    assert not ok and "java" in reason
    java_dir = Path(sys.executable).parent  # any PATH with a `java` works; use the real one if present
    ok, reason = ProcessBackend({"PATH": "/usr/bin:/bin:" + str(java_dir)}).available()
    assert ok, reason
    assert reason == "reference broker (no KAFKA_HOME)"
    home = _fake_kafka_home(tmp_path)
    ok, reason = ProcessBackend({"PATH": "/usr/bin:/bin", "KAFKA_HOME": str(home)}).available()
    assert ok and reason == f"KAFKA_HOME={home} (Apache Kafka 3.7.1)"


def test_zookeeper_version_is_read_from_the_classpath_jar(tmp_path: Path) -> None:
    (tmp_path / "zookeeper-3.9.5.jar").write_bytes(b"")
    (tmp_path / "zookeeper-jute-3.9.5.jar").write_bytes(b"")
    assert zookeeper_jar_version(f"/nonexistent/*:{tmp_path}/*") == "3.9.5"
