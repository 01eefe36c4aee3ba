"""Kafka's own tools beside the cluster (`harness.kafka_tools`, `kafka-chaos kafka tool`): the script -> main class
table (every name in 3.9.2 and 4.4.0, each class in the cached install's jars when that release is cached), the
bootstrap address and release a hand-made run directory recorded, the java command line, the `--bootstrap-server`
added or not, the command line's `--`, unknown names, and the tools' fetch into an install made without them (a
stand-in `mvn` on PATH; the real one runs in
tests/integration/process_backend/test_kafka_tools_on_a_live_cluster.py)."""

from __future__ import annotations

import itertools
import json
import os
import stat
import zipfile
from pathlib import Path

import pytest

from harness.cli import build_parser, main
from harness.engine.bundle import owner
from harness.errors import ConfigError, HarnessError
from harness.install.cache import read_manifest, write_manifest
from harness.install.kafka import InstallError, KafkaInstall, cached_kafka, ensure_tools, install_kafka
from harness.kafka_tools import (
    AFTER_SUBCOMMAND,
    LEAD,
    NONE,
    TOOLS,
    bootstrap_of,
    read_run,
    tool_argv,
    tool_for,
    tool_names,
    with_bootstrap,
)
from harness.model.releases import Release

REQUIRED = ("kafka-topics", "kafka-consumer-groups", "kafka-acls", "kafka-reassign-partitions", "kafka-configs",
            "kafka-features", "kafka-metadata-quorum", "kafka-leader-election", "kafka-broker-api-versions",
            "kafka-console-producer", "kafka-console-consumer", "kafka-producer-perf-test", "kafka-get-offsets",
            "kafka-transactions", "kafka-storage")


# -- the table ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("release", ["3.9.2", "4.4.0"])
def test_every_tool_resolves_in_3_9_and_4_4(release: str) -> None:
    assert set(REQUIRED) <= set(tool_names())
    for name in tool_names():
        tool = tool_for(name, release)
        assert tool.name == name and tool.main and tool.source, name


def test_each_scripts_ranges_are_contiguous_and_do_not_overlap() -> None:
    for name in tool_names():
        ranges = sorted((t for t in TOOLS if t.name == name), key=lambda t: Release.parse(t.since) or Release(0))
        assert ranges[-1].until is None, name
        for before, after in itertools.pairwise(ranges):
            assert before.until == after.since, (name, before.until, after.since)
        for t in ranges:
            assert t.bootstrap in (LEAD, AFTER_SUBCOMMAND, NONE) and t.heap in ("-Xmx256M", "-Xmx512M"), t
            assert f"bin/{name}.sh at " in t.source or ".jar" in t.source, t


def test_the_classes_moved_where_kafkas_scripts_say() -> None:
    assert tool_for("kafka-topics", "3.6.2").main == "kafka.admin.TopicCommand"
    assert tool_for("kafka-topics", "3.7.0").main == "org.apache.kafka.tools.TopicCommand"
    assert tool_for("kafka-consumer-groups", "3.7.2").main == "kafka.admin.ConsumerGroupCommand"
    assert tool_for("kafka-consumer-groups", "3.8.0").main.endswith("tools.consumer.group.ConsumerGroupCommand")
    assert tool_for("kafka-acls", "3.9.2").main == "kafka.admin.AclCommand"
    assert tool_for("kafka-acls", "4.0.0").main == "org.apache.kafka.tools.AclCommand"
    assert tool_for("kafka-configs", "4.3.1").main == "kafka.admin.ConfigCommand"
    assert tool_for("kafka-configs", "4.4.0").main == "org.apache.kafka.tools.ConfigCommand"
    assert tool_for("kafka-storage", "4.4.0").main == "kafka.tools.StorageTool"
    assert tool_for("kafka-producer-perf-test", "4.1.0").bootstrap == NONE
    assert tool_for("kafka-producer-perf-test", "4.2.0").bootstrap == LEAD


def test_a_tool_a_release_lacks_names_the_release_it_came_in() -> None:
    with pytest.raises(ConfigError, match=r"kafka-metadata-quorum is not in Apache Kafka 3\.2\.3: its script came "
                                          r"in 3\.3\.0"):
        tool_for("kafka-metadata-quorum", "3.2.3")


def test_an_unknown_name_lists_the_known_ones_and_the_nearest() -> None:
    with pytest.raises(HarnessError, match=r"unknown Kafka tool 'kafka-topic'; did you mean 'kafka-topics'\? "
                                           r"valid: kafka-acls, .*kafka-transactions"):
        tool_for("kafka-topic", "3.9.2")
    assert tool_for("kafka-topics.sh", "3.9.2") == tool_for("bin/kafka-topics.sh", "3.9.2") \
        == tool_for("kafka-topics", "3.9.2")


def _jar_classes(libs: Path) -> set[str]:
    names: set[str] = set()
    for jar in libs.glob("*.jar"):
        with zipfile.ZipFile(jar) as z:
            names.update(n[:-6].replace("/", ".") for n in z.namelist() if n.endswith(".class"))
    return names


@pytest.mark.parametrize("release", ["3.9.2", "4.4.0"])
def test_each_tools_class_is_in_the_cached_installs_jars(release: str) -> None:
    kafka = cached_kafka(release)
    if kafka is None:
        pytest.skip(f"Apache Kafka {release} is not in the cache here (kafka-chaos kafka install {release})")
    classes = _jar_classes(kafka.libs)
    core = {n: tool_for(n, release).main for n in tool_names() if tool_for(n, release).main.startswith("kafka.")}
    assert {n: c for n, c in core.items() if c not in classes} == {}
    if not kafka.has_tools:
        pytest.skip(f"{kafka.home} has no kafka-tools yet (`kafka-chaos kafka tool` adds it); checked only the "
                    f"classes in kafka_2.13: {', '.join(sorted(core.values()))}")
    missing = {n: tool_for(n, release).main for n in tool_names() if tool_for(n, release).main not in classes}
    assert missing == {}


# -- what a run recorded -----------------------------------------------------------------------------------------


def _run(tmp_path: Path, info: dict[str, object] | None, cluster: dict[str, object] | None) -> Path:
    run = tmp_path / "exp-20261201T000000Z"
    (run / "cluster").mkdir(parents=True)
    if info is not None:
        (run / "run.json").write_text(json.dumps(info), encoding="utf-8")
    if cluster is not None:
        (run / "cluster" / "cluster.json").write_text(json.dumps(cluster), encoding="utf-8")
    return run


def test_the_bootstrap_and_release_come_from_what_the_run_recorded(tmp_path: Path) -> None:
    run = _run(tmp_path, {"status": "running", "broker": {"flavour": "apache-kafka", "version": "3.9.2"},
                          "cluster_info": {"bootstrap_servers": "127.0.0.1:1"}},
               {"backend": "process", "bootstrap_servers": "127.0.0.1:31001,127.0.0.1:31002"})
    target = read_run(run)
    assert (target.release, target.bootstrap, target.status) == ("3.9.2", "127.0.0.1:31001,127.0.0.1:31002",
                                                                 "running")
    (run / "cluster" / "cluster.json").unlink()  # run.json's copy of describe() answers too
    assert bootstrap_of(run) == "127.0.0.1:1"


def test_a_run_without_a_bootstrap_address_names_the_files_and_fields(tmp_path: Path) -> None:
    run = _run(tmp_path, {"status": "running", "broker": {"version": "3.9.2"}}, {"backend": "process"})
    with pytest.raises(ConfigError, match=r"cluster\.json has no bootstrap_servers, and .*run\.json has no "
                                          r"cluster_info\.bootstrap_servers"):
        bootstrap_of(run)


def test_a_run_that_never_came_up_names_broker_version(tmp_path: Path) -> None:
    run = _run(tmp_path, {"status": "running", "broker": {"flavour": None, "version": None}}, None)
    with pytest.raises(ConfigError, match=r"run\.json: broker\.version is not recorded"):
        read_run(run)
    with pytest.raises(ConfigError, match=r"not a run directory: .*run\.json is missing"):
        read_run(tmp_path)


# -- the command line of a tool ----------------------------------------------------------------------------------


def _install(root: Path, version: str, *, tools: bool = True) -> KafkaInstall:
    home = root / f"kafka-{version}"
    (home / "libs").mkdir(parents=True)
    (home / "config").mkdir()
    for jar in (f"kafka_2.13-{version}.jar", "jackson-core-2.16.2.jar", "argparse4j-0.7.0.jar",
                *([f"kafka-tools-{version}.jar"] if tools else [])):
        (home / "libs" / jar).write_bytes(b"")
    major = int(version.split(".")[0])
    name = "kafka-chaos-tools-log4j.properties" if major < 4 else "kafka-chaos-tools-log4j2.properties"
    if tools:
        (home / "config" / name).write_text("# test\n")
    write_manifest(home, {"version": version, "source": "test", "log4j": "config/x.properties"})
    found = cached_kafka(version, {"KAFKA_CHAOS_CACHE": str(root)})
    assert found is not None
    return found


def test_the_java_command_line_is_the_scripts(tmp_path: Path) -> None:
    kafka = _install(tmp_path, "3.9.2")
    argv = tool_argv(kafka, "kafka-topics.sh", ["--describe"], java="/j/bin/java", environ={})
    assert argv[0] == "/j/bin/java" and argv[1] == "-Xmx256M"
    assert f"-Dlog4j.configuration=file:{kafka.home}/config/kafka-chaos-tools-log4j.properties" in argv
    cp = argv[argv.index("-cp") + 1].split(":")
    assert f"{kafka.libs}/kafka-tools-3.9.2.jar" in cp and len(cp) == 4
    assert argv[-2:] == ["org.apache.kafka.tools.TopicCommand", "--describe"]
    console = tool_argv(kafka, "kafka-console-consumer", [], environ={"KAFKA_OPTS": "-Dx=1"})
    assert console[1] == "-Xmx512M" and "-Dx=1" in console
    mine = tool_argv(kafka, "kafka-topics", [], environ={"KAFKA_HEAP_OPTS": "-Xmx1G -Xms1G"})
    assert mine[1:3] == ["-Xmx1G", "-Xms1G"] and "-Xmx256M" not in mine
    four = _install(tmp_path, "4.4.0")
    assert f"-Dlog4j2.configurationFile={four.home}/config/kafka-chaos-tools-log4j2.properties" in tool_argv(
        four, "kafka-configs", [], environ={})
    assert tool_argv(four, "kafka-configs", [], environ={})[-1] == "org.apache.kafka.tools.ConfigCommand"


def test_bootstrap_server_is_added_unless_the_arguments_name_a_server() -> None:
    topics = tool_for("kafka-topics", "3.9.2")
    assert with_bootstrap(topics, ["--describe"], "h:1") == ["--bootstrap-server", "h:1", "--describe"]
    for given in (["--bootstrap-server", "x:2", "--list"], ["--bootstrap-server=x:2", "--list"],
                  ["--bootstrap-controller", "c:3", "--list"]):
        assert with_bootstrap(topics, given, "h:1") == given
    txn = tool_for("kafka-transactions", "3.9.2")
    assert with_bootstrap(txn, ["list"], "h:1") == ["--bootstrap-server", "h:1", "list"]  # before the subcommand
    cluster = tool_for("kafka-cluster", "3.9.2")
    assert with_bootstrap(cluster, ["cluster-id"], "h:1") == ["cluster-id", "--bootstrap-server", "h:1"]
    assert with_bootstrap(tool_for("kafka-storage", "3.9.2"), ["info", "-c", "f"], "h:1") == ["info", "-c", "f"]


# -- the command line of kafka-chaos -----------------------------------------------------------------------------


@pytest.mark.parametrize(("argv", "name", "run", "tool_args"), [
    (["kafka-topics", "--run", "R", "--", "--describe"], "kafka-topics", "R", ["--describe"]),
    (["kafka-topics", "--", "--describe", "--topic", "x"], "kafka-topics", None, ["--describe", "--topic", "x"]),
    (["kafka-topics", "--describe"], "kafka-topics", None, ["--describe"]),
    (["kafka-topics.sh", "--run", "R", "--list", "--topic", "x"], "kafka-topics.sh", "R", ["--list", "--topic", "x"]),
    (["--run", "R", "kafka-topics", "--", "--run", "x", "-h", "--"], "kafka-topics", "R", ["--run", "x", "-h", "--"]),
    (["kafka-topics", "--", "--kafka", "4"], "kafka-topics", None, ["--kafka", "4"]),
    (["kafka-transactions", "--run", "R", "--", "list"], "kafka-transactions", "R", ["list"]),
    (["kafka-topics"], "kafka-topics", None, []),
])
def test_kafka_tool_parses_its_options_and_passes_the_rest(argv: list[str], name: str, run: str | None,
                                                            tool_args: list[str]) -> None:
    args, rest = build_parser().parse_known_args(["kafka", "tool", *argv])
    assert (args.name, args.run, args.tool_args, args.runs_dir, rest) == (name, run, tool_args, "runs", [])


def test_kafka_install_and_list_parse_as_before() -> None:
    args, rest = build_parser().parse_known_args(["kafka", "install", "3.8"])
    assert (args.action, args.version, rest) == ("install", "3.8", [])
    args, _ = build_parser().parse_known_args(["kafka", "install"])
    assert args.version == "3.9"
    assert build_parser().parse_known_args(["kafka", "list"])[0].action == "list"


def _fake_java(tmp_path: Path, code: int) -> Path:
    """A `java` that writes its arguments, one a line, to argv.txt and exits `code`."""
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    java = home / "bin" / "java"
    java.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {tmp_path}/argv.txt\necho tool-output\nexit {code}\n")
    java.chmod(java.stat().st_mode | stat.S_IEXEC)
    return home


def test_kafka_tool_runs_the_runs_release_against_its_bootstrap_and_returns_the_tools_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    _install(tmp_path / "cache", "3.9.2")
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path, 3)))
    run = _run(tmp_path, {"status": "running", "owner": owner(), "broker": {"version": "3.9.2"}},
               {"bootstrap_servers": "127.0.0.1:31001"})
    assert main(["kafka", "tool", "kafka-topics", "--run", str(run), "--", "--describe"]) == 3
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert argv[-4:] == ["org.apache.kafka.tools.TopicCommand", "--bootstrap-server", "127.0.0.1:31001", "--describe"]
    out, err = capfd.readouterr()
    assert out == "tool-output\n" and "--bootstrap-server 127.0.0.1:31001" in err


def test_without_run_the_one_live_run_is_the_run_and_several_are_refused(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]) -> None:
    _install(tmp_path / "cache", "3.9.2")
    _install(tmp_path / "cache", "4.4.0")
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("KAFKA_HOME", raising=False)
    monkeypatch.setenv("JAVA_HOME", str(_fake_java(tmp_path, 0)))
    runs = tmp_path / "runs"
    live = _run(runs, {"status": "running", "owner": owner(), "broker": {"version": "3.9.2"}},
                {"bootstrap_servers": "127.0.0.1:31001"})
    ended = runs / "old-20261130T000000Z"
    ended.mkdir()
    (ended / "run.json").write_text(json.dumps({"status": "completed", "owner": owner()}))
    assert main(["kafka", "tool", "kafka-topics", "--runs-dir", str(runs), "--describe"]) == 0
    argv = (tmp_path / "argv.txt").read_text().splitlines()
    assert argv[-4:] == ["org.apache.kafka.tools.TopicCommand", "--bootstrap-server", "127.0.0.1:31001", "--describe"]
    assert f"against the run {live}" in capfd.readouterr().err
    assert main(["kafka", "tool", "kafka-topics", "--runs-dir", str(runs), "--", "--bootstrap-server", "h:1"]) == 0
    assert f"-Dlog4j2.configurationFile={tmp_path}/cache/kafka-4.4.0" in (tmp_path / "argv.txt").read_text()
    twin = runs / "twin-20261201T000001Z"
    twin.mkdir()
    (twin / "run.json").write_text(json.dumps({"status": "running", "owner": owner()}))
    assert main(["kafka", "tool", "kafka-topics", "--runs-dir", str(runs), "--describe"]) == 2
    err = capfd.readouterr().err
    assert f"2 runs are up under {runs}: {live.name}, {twin.name}; hint: choose one with --run" in err


def test_kafka_tool_refuses_to_aim_at_a_run_that_ended(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("KAFKA_CHAOS_CACHE", str(tmp_path / "cache"))
    run = _run(tmp_path, {"status": "completed", "owner": owner(), "broker": {"version": "3.9.2"}},
               {"bootstrap_servers": "127.0.0.1:31001"})
    assert main(["kafka", "tool", "kafka-topics", "--run", str(run), "--describe"]) == 2
    assert "the run ended completed, so its cluster is down" in capsys.readouterr().err
    assert main(["kafka", "tool", "kafka-topic", "--run", str(run)]) == 2
    assert "did you mean 'kafka-topics'?" in capsys.readouterr().err
    assert main(["kafka", "tool", "kafka-topics", "--run", str(run), "--kafka", "4.4.0"]) == 2
    assert "disagree: the run ran Apache Kafka 3.9.2" in capsys.readouterr().err
    assert main(["kafka", "tool", "kafka-topics", "--run", str(run), "--kafka", "3.9", "--list"]) == 2
    assert "so its cluster is down" in capsys.readouterr().err  # 3.9 is the run's line: no disagreement


# -- the tools' jars in an install made without them -------------------------------------------------------------


def _fake_mvn(tmp_path: Path, jars: list[str], code: int = 0) -> str:
    """A `mvn` that 'copies' `jars` (empty files) into its -DoutputDirectory, or fails like an unreachable Maven."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    mvn = bin_dir / "mvn"
    body = ("echo '[ERROR] Failed to execute goal: Could not transfer artifact org.apache.kafka:kafka-tools:pom:3.9.2 "
            f"from/to central: repo1.maven.org: Temporary failure in name resolution'\nexit {code}\n" if code else
            'for a in "$@"; do case "$a" in -DoutputDirectory=*) out="${a#-DoutputDirectory=}";; esac; done\n'
            'mkdir -p "$out"\n' + "".join(f'touch "$out/{j}"\n' for j in jars) + "exit 0\n")
    mvn.write_text("#!/bin/sh\n" + body)
    mvn.chmod(mvn.stat().st_mode | stat.S_IEXEC)
    return f"{bin_dir}:{os.environ.get('PATH', '')}"


def test_an_install_without_tools_gets_them_and_keeps_the_brokers_versions(tmp_path: Path) -> None:
    kafka = _install(tmp_path / "cache", "3.9.2", tools=False)
    assert not kafka.has_tools and kafka.tools_log4j is None
    env = {"KAFKA_CHAOS_CACHE": str(tmp_path / "cache"), "PATH": _fake_mvn(tmp_path, [
        "kafka-tools-3.9.2.jar", "connect-runtime-3.9.2.jar", "argparse4j-0.7.0.jar", "jackson-core-2.17.0.jar"])}
    said: list[str] = []
    found = ensure_tools(kafka, environ=env, progress=said.append)
    jars = sorted(p.name for p in found.libs.glob("*.jar"))
    assert jars == ["argparse4j-0.7.0.jar", "connect-runtime-3.9.2.jar", "jackson-core-2.16.2.jar",
                    "kafka-tools-3.9.2.jar", "kafka_2.13-3.9.2.jar"]
    assert found.has_tools and found.tools_log4j is not None and "WARN, stderr" in found.tools_log4j.read_text()
    manifest = read_manifest(found.home) or {}
    assert manifest["tools"] == "org.apache.kafka:kafka-tools:3.9.2" and manifest["jars"] == 5
    assert any("has no command-line tools; adding org.apache.kafka:kafka-tools:3.9.2" in s for s in said)
    assert any("kept the broker's jackson-core-2.16.2.jar over jackson-core-2.17.0.jar" in s for s in said)
    assert not list((tmp_path / "cache").glob(".staging-*"))
    assert ensure_tools(found, environ={"KAFKA_CHAOS_CACHE": str(tmp_path / "cache"), "PATH": "/nonexistent"}) \
        == found  # present: no Maven asked


def test_when_maven_is_unreachable_the_error_names_what_was_tried(tmp_path: Path) -> None:
    kafka = _install(tmp_path / "cache", "3.9.2", tools=False)
    env = {"KAFKA_CHAOS_CACHE": str(tmp_path / "cache"), "PATH": _fake_mvn(tmp_path, [], code=1)}
    with pytest.raises(InstallError, match=r"could not add Kafka's command-line tools to .*kafka-3\.9\.2; tried "
                                           r"Maven Central \(mvn\) for org\.apache\.kafka:kafka-tools:3\.9\.2: mvn "
                                           r"exited 1: .*Temporary failure in name resolution"):
        ensure_tools(kafka, environ=env)
    assert not kafka.has_tools and sorted(p.name for p in kafka.libs.glob("*")) == [
        "argparse4j-0.7.0.jar", "jackson-core-2.16.2.jar", "kafka_2.13-3.9.2.jar"]
    with pytest.raises(InstallError, match=r"no `mvn` on PATH"):
        ensure_tools(kafka, environ={"KAFKA_CHAOS_CACHE": str(tmp_path / "cache"), "PATH": "/nonexistent"})


def test_kafka_home_is_never_changed(tmp_path: Path) -> None:
    home = _install(tmp_path / "elsewhere", "3.9.2", tools=False)
    env = {"KAFKA_CHAOS_CACHE": str(tmp_path / "cache"), "PATH": "/nonexistent", "KAFKA_HOME": str(home.home)}
    kafka = install_kafka("3.9.2", environ=env)
    with pytest.raises(InstallError, match=r"has no libs/kafka-tools-3\.9\.2\.jar"):
        ensure_tools(kafka, environ=env)


def test_the_docs_list_every_tool_and_class_of_the_table() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "apache-kafka.md").read_text(encoding="utf-8")
    section = docs[docs.index("## Kafka's tools"):]
    assert [n for n in tool_names() if f"| `{n}` |" not in section] == []
    assert sorted({t.main for t in TOOLS if f"`{t.main}`" not in section}) == []
