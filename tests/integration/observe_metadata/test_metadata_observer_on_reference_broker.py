"""MetadataObserver against real reference brokers (a real ZooKeeper server, 3 reference-broker processes
speaking the Kafka protocol over TCP): each broker's own Metadata answer, polled on its own."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest

from harness.observe.metadata import MetadataObserver
from tests.fixtures.broker import ReferenceCluster
from tests.integration.workload.support import Events, ThreadCheck, wait_until

pytestmark = pytest.mark.integration


@pytest.mark.timeout(60)
def test_metadata_observer_reports_each_brokers_controller_and_the_change_after_the_controller_is_killed(
    reference_cluster_factory: Callable[..., ReferenceCluster],
) -> None:
    """One `controller.view` per broker naming the ZooKeeper controller; after SIGKILL of the controller the
    survivors each report the new one, the killed broker reports nothing more, and its silence does not slow
    the polling of the others."""
    cluster = reference_cluster_factory(3)
    events = Events()
    threads = ThreadCheck()
    addresses = {i: b.bootstrap_servers for i, b in cluster.brokers.items()}
    with MetadataObserver(addresses, events, interval=0.1, timeout_s=0.5) as observer:
        views = wait_until(lambda: len({e["broker"] for e in events.of("controller.view")}) == 3, 20.0,
                           "a controller.view from each broker", lambda: events.all)
        assert views
        controller, _ = cluster.controller()
        first = events.of("controller.view")
        assert sorted(e["broker"] for e in first) == [1, 2, 3]  # one each: only changes are emitted
        assert all(e["controller"] == controller and e["src"] == "metadata" for e in first), first

        cluster[controller].kill()
        survivors = [b for b in (1, 2, 3) if b != controller]
        wait_until(lambda: all(events.of("controller.view", broker=b)[-1]["controller"] not in (controller, -1)
                               for b in survivors), 20.0, "the survivors to name a new controller",
                   lambda: events.of("controller.view"))
        new, _ = cluster.controller()
        assert new in survivors
        before = observer.answers
        wait_until(lambda: all(observer.answers[b] >= before[b] + 5 for b in survivors), 5.0,
                   "5 more answers from each survivor while the killed broker is silent", lambda: observer.answers)
        assert observer.answers[controller] == before[controller]
    threads.assert_back()
    assert [e["controller"] for e in events.of("controller.view", broker=controller)] == [controller]
    for b in survivors:
        named = [e["controller"] for e in events.of("controller.view", broker=b)]
        assert named[0] == controller and named[-1] == new, named
        assert all(x != y for x, y in itertools.pairwise(named)), named
