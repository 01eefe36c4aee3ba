"""AdminObserver against reference brokers.

All parts real: a real ZooKeeper server, reference-broker processes (the project's ZooKeeper-mode
broker in Python, speaking the Kafka protocol over TCP), confluent-kafka's AdminClient and a
ConsumerGroupWorkload of real librdkafka consumers.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from harness.observe.admin import AdminObserver
from harness.workload import ConsumerGroupWorkload
from tests.fixtures.broker import ReferenceCluster
from tests.integration.workload.support import CLASSIC, Events, ThreadCheck, create_topic, wait_until

pytestmark = pytest.mark.integration


def test_admin_observer_sees_controller_failover_leaders_and_group_state_on_reference_brokers(
    reference_cluster_factory: Callable[..., ReferenceCluster],
) -> None:
    """3 brokers: the first cycle reports the controller, 3 brokers up and every partition; the group's
    state comes from DescribeGroups (Stable, 2 members, coordinator, assignor; generation null); after
    SIGKILL of the controller: broker.down, a new controller and new leaders - and no duplicates."""
    cluster = reference_cluster_factory(3)
    create_topic(cluster.bootstrap_servers, "t", 2, replication_factor=3)
    events = Events()
    threads = ThreadCheck()
    with (
        AdminObserver(cluster.bootstrap_servers, events, interval=0.2, request_timeout_s=2.0) as observer,
        ConsumerGroupWorkload(
            cluster.bootstrap_servers, events, group="billing", topics=["t"], members=2, extra_config=CLASSIC
        ) as group,
    ):
        observer.start()
        group.start()
        stable = wait_until(
            lambda: [e for e in events.of("group.state", group="billing") if e["state"] == "Stable"
                     and len(e["members"]) == 2 and all(m["assignment"] for m in e["members"])],
            30.0,
            "group.state Stable with 2 assigned members",
            lambda: (events.of("group.state"), events.of("observer.error"), group.assignments()),
        )[-1]
        controller, _ = cluster.controller()
        assert events.of("controller")[-1]["broker"] == controller
        assert sorted(e["broker"] for e in events.of("broker.up")) == [1, 2, 3]
        assert stable["generation"] is None and stable["leader"] is None and stable["protocol"] == "range"
        assert stable["coordinator"] in (1, 2, 3)
        assert sorted(p for m in stable["members"] for p in map(tuple, m["assignment"])) == [("t", 0), ("t", 1)]
        before = {e["partition"]: e for e in events.of("partition.state", topic="t")}
        assert set(before) == {0, 1} and all(len(e["replicas"]) == 3 for e in before.values())

        cluster[controller].kill()
        wait_until(lambda: events.of("broker.down"), 30.0, "broker.down of the killed controller")
        wait_until(
            lambda: events.of("controller")[-1]["broker"] not in (controller, -1),
            30.0,
            "a new controller",
            lambda: events.of("controller"),
        )
        wait_until(
            lambda: all(
                events.of("partition.state", topic="t", partition=p)[-1]["leader"] != controller for p in (0, 1)
            ),
            30.0,
            "no partition led by the killed broker",
        )
    threads.assert_back()
    assert [e["broker"] for e in events.of("broker.down")] == [controller]
    for p in (0, 1):  # every partition.state is a change of that partition
        keys = [
            (e["leader"], tuple(sorted(e["isr"])), tuple(e["replicas"]))
            for e in events.of("partition.state", topic="t", partition=p)
        ]
        assert all(a != b for a, b in itertools.pairwise(keys)), keys
    states = [
        {k: v for k, v in e.items() if k not in ("wall", "t")} for e in events.of("group.state", group="billing")
    ]
    assert all(a != b for a, b in itertools.pairwise(states))
