"""`kafka-chaos kafka tool` against a live Apache Kafka 3.9 cluster (one broker, a real ZooKeeper, the process
backend) laid out as a running run: `<run>/cluster/` is the backend's working directory (its `cluster.json` names
the bootstrap address, as in a run) and `<run>/run.json` says `running`, written by this process, with the
release the broker runs. Kafka's own `kafka-topics --describe`, typed as issue 42 words it (no `--run`: the one
live run under `runs/` is the run, its `--bootstrap-server` added), lists a topic made beside it, and
`kafka-consumer-groups --run <dir> --list` exits 0. The first use adds `kafka-tools` to a cached install made
without it (Maven Central, once, about 30 s)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.base import ClusterSpec
from harness.cluster.process_backend import ProcessBackend, ProcessCluster
from harness.engine.bundle import owner
from harness.install.kafka import InstallError, ensure_tools
from harness.workload.common import LIBRDKAFKA_LOGGER
from tests.fixtures.process_cluster import APACHE_KAFKA, apache_kafka

pytestmark = [pytest.mark.integration]

TOPIC = "tools-see-me"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A run directory whose cluster is up: the backend's files under cluster/, run.json as a live run has it."""
    kafka = apache_kafka()
    try:
        ensure_tools(kafka, progress=print)
    except InstallError as exc:
        pytest.skip(f"Kafka's tools cannot be fetched here: {exc}")
    run = tmp_path_factory.mktemp("kafka-tools") / "runs" / "tools-20261201T000000Z"
    run.mkdir(parents=True)
    spec = ClusterSpec(brokers=1, zookeepers=1, ready_timeout_s=120, broker_config={
        "offsets.topic.num.partitions": "1"})
    with ProcessBackend(broker=APACHE_KAFKA).up(spec, run / "cluster") as cluster:
        (run / "run.json").write_text(json.dumps({
            "status": "running", "owner": owner(),
            "broker": {"flavour": cluster.flavour.name, "version": cluster.flavour.version}}), encoding="utf-8")
        _create_topic(cluster)
        yield run


def _create_topic(cluster: ProcessCluster) -> None:
    admin = AdminClient(cast(dict[str, Any], {"bootstrap.servers": cluster.bootstrap_servers,
                                              "logger": LIBRDKAFKA_LOGGER}))
    admin.create_topics([NewTopic(TOPIC, num_partitions=2, replication_factor=1)])[TOPIC].result(60)


def _tool(*argv: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """`kafka-chaos kafka tool ...` as a user types it (a child process: the tool's output is its stdout)."""
    return subprocess.run([sys.executable, "-m", "harness.cli", "kafka", "tool", *argv], capture_output=True,
                          text=True, timeout=120, check=False, cwd=cwd)


def test_kafka_topics_describes_the_topic_made_on_the_live_runs_cluster(run_dir: Path) -> None:
    bootstrap = json.loads((run_dir / "cluster" / "cluster.json").read_text())["bootstrap_servers"]
    # the words of issue 42: from the project directory, with one run up under runs/
    done = _tool("kafka-topics", "--describe", cwd=run_dir.parent.parent)
    assert done.returncode == 0, done.stderr
    assert f"Topic: {TOPIC}" in done.stdout and "PartitionCount: 2" in done.stdout, done.stdout
    assert f"against the run runs/{run_dir.name} (--bootstrap-server {bootstrap})" in done.stderr


def test_kafka_consumer_groups_list_exits_0_and_a_failing_tool_its_own_code(run_dir: Path) -> None:
    done = _tool("kafka-consumer-groups.sh", "--run", str(run_dir), "--list")
    assert done.returncode == 0, done.stderr
    bad = _tool("kafka-topics", "--run", str(run_dir), "--", "--describe", "--topic", "no-such-topic")
    assert bad.returncode == 1 and "no-such-topic" in bad.stdout + bad.stderr, (bad.stdout, bad.stderr)
