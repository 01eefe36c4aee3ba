"""Shipped experiments end to end on the process backend with Apache Kafka 3.9 (installed from Maven
Central into the cache): brokers in their own JVMs, real ZooKeeper, the embedded Toxiproxy, real
librdkafka clients and the Spark verifiers, through the `kafka-chaos run` command.
(a short controller kill runs through the pytest plugin: tests/nightly/test_pytest_plugin_runs.py;
leader-election, consumer-rebalance and reassignment have files of their own, so the test workers run them side by
side.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import events, failing_checks, run_info, run_shipped

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow]


def test_zookeeper_partition_expires_the_session_and_moves_the_controller(tmp_path: Path) -> None:
    """The controller's links to ZooKeeper are cut: its registration vanishes after the session timeout
    and another broker becomes controller with a higher epoch while the cut lasts."""
    kafka = apache_kafka()
    code, run_dir = run_shipped("zookeeper-partition.yaml", tmp_path)
    assert run_info(run_dir)["broker"]["flavour"] == "apache-kafka"
    assert run_info(run_dir)["broker"]["version"] == kafka.version
    evs = events(run_dir)
    cut = next(e for e in evs if e["type"] == "fault.start" and e["kind"] == "isolate_zookeeper")
    healed = next(e for e in evs if e["type"] == "fault.end" and e["fault_id"] == cut["fault_id"])
    victim = cut["brokers"][0]
    during = [e for e in evs if e["src"] == "zk" and cut["t"] <= e["t"] <= healed["t"]]
    down = next(e for e in during if e["type"] == "broker.down" and e["broker"] == victim)
    expiry = down["t"] - cut["t"]
    print(f"session of broker {victim} expired {expiry:.2f}s after its ZooKeeper links were cut")
    assert 3.0 <= expiry <= 15.0
    before = max((e["epoch"] for e in evs if e["type"] == "controller" and e["src"] == "zk"
                  and e["t"] < cut["t"] and e.get("epoch") is not None), default=0)
    new = [e for e in during if e["type"] == "controller" and e["broker"] not in (-1, victim)]
    assert new and new[0]["epoch"] > before
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
