"""AdminObserver against librdkafka's mock cluster.

Real part: confluent-kafka's AdminClient (librdkafka) over loopback TCP, polled by the observer.
Stand-in: the brokers are librdkafka's in-process mock cluster, not Kafka. The mock answers
Metadata and DescribeCluster but not ListGroups/DescribeGroups, which makes it the place to show
that an unsupported call is recorded once and the other calls go on; group.state itself is
checked against Apache Kafka in tests/integration/process_backend/test_observers_on_apache_kafka.py.
"""

from __future__ import annotations

import pytest

from harness.observe.admin import AdminObserver
from harness.observe.base import Observer
from tests.fixtures.librdkafka_mock import MockCluster
from tests.integration.workload.support import Events, ThreadCheck, wait_until

pytestmark = pytest.mark.integration


def test_admin_observer_emits_cluster_state_then_only_changes_on_mock_cluster(
    librdkafka_mock_cluster: MockCluster,
) -> None:
    """First cycle: controller, every broker up, every partition; then exactly the changes (leader move,
    controller change, broker down) and nothing while the cluster stands still."""
    mock = librdkafka_mock_cluster
    mock.create_topic("t", 2, 3)
    mock.set_leader("t", 0, 1)
    mock.set_leader("t", 1, 2)
    mock.set_controller(2)
    events = Events()
    threads = ThreadCheck()
    with AdminObserver(mock.bootstrap_servers, events, interval=0.1, request_timeout_s=1.0) as observer:
        assert isinstance(observer, Observer)
        observer.start()
        wait_until(lambda: observer.cycles >= 3, 10.0, "3 observer cycles", lambda: observer.cycles)
        assert [(e["broker"], e["epoch"]) for e in events.of("controller")] == [(2, None)]
        assert sorted(e["broker"] for e in events.of("broker.up")) == [1, 2, 3]
        first = {(e["topic"], e["partition"]): e for e in events.of("partition.state", topic="t")}
        assert {k: (v["leader"], sorted(v["isr"]), v["replicas"]) for k, v in first.items()} == {
            ("t", 0): (1, [1, 2, 3], first[("t", 0)]["replicas"]),
            ("t", 1): (2, [1, 2, 3], first[("t", 1)]["replicas"]),
        }
        assert all(v["leader_epoch"] is None and v["controller_epoch"] is None for v in first.values())
        quiet = len(events.all)
        cycles = observer.cycles
        wait_until(lambda: observer.cycles >= cycles + 3, 10.0, "3 more cycles")
        assert len(events.all) == quiet  # nothing changed, nothing emitted

        mock.set_leader("t", 0, 3)
        mock.set_controller(1)
        mock.broker_down(2)
        wait_until(lambda: events.of("broker.down"), 10.0, "broker.down")
        wait_until(lambda: len(events.of("partition.state", topic="t", partition=0)) >= 2, 10.0, "leader move")
        wait_until(lambda: len(events.of("controller")) >= 2, 10.0, "controller change")
    threads.assert_back()
    assert [e["broker"] for e in events.of("controller")] == [2, 1]
    assert [e["broker"] for e in events.of("broker.down")] == [2]
    assert events.of("partition.state", topic="t", partition=0)[-1]["leader"] == 3
    assert len(events.of("partition.state", topic="t", partition=1)) == 1  # unchanged partition: one event


def test_admin_observer_records_an_unsupported_call_once_and_keeps_polling_on_mock_cluster(
    librdkafka_mock_cluster: MockCluster,
) -> None:
    """ListGroups/DescribeGroups fail on the mock: one observer.error per (call, error kind) over many
    cycles, while metadata polling keeps reporting changes."""
    mock = librdkafka_mock_cluster
    mock.create_topic("u", 1, 3)
    mock.set_leader("u", 0, 1)
    mock.set_controller(1)
    events = Events()
    with AdminObserver(
        mock.bootstrap_servers, events, interval=0.1, request_timeout_s=1.0, groups=["some-group"], name="adm"
    ) as observer:
        observer.start()
        wait_until(lambda: observer.cycles >= 4, 10.0, "4 observer cycles", lambda: observer.cycles)
        mock.set_leader("u", 0, 2)
        wait_until(lambda: len(events.of("partition.state", topic="u")) >= 2, 10.0, "leader change seen")
    errors = events.of("observer.error")
    keys = [(e["call"], e["error"]) for e in errors]
    assert errors and len(keys) == len(set(keys))
    assert {e["call"] for e in errors} <= {"list_consumer_groups", "describe_consumer_groups"}
    assert all(e["observer"] == "adm" and e["src"] == "adm" for e in errors)
