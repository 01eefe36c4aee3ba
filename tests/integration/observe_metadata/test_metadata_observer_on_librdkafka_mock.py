"""MetadataObserver against librdkafka's mock cluster: a Kafka-protocol server that starts in milliseconds, beside
the observer's tests on Apache Kafka (tests/integration/process_backend/test_observers_on_apache_kafka.py)."""

from __future__ import annotations

import pytest

from harness.observe.metadata import MetadataObserver
from tests.fixtures.librdkafka_mock import MockCluster
from tests.integration.workload.support import Events, ThreadCheck, wait_until

pytestmark = pytest.mark.integration


@pytest.mark.timeout(30)
def test_metadata_observer_reads_the_controller_id_from_librdkafka_mock_brokers(
    librdkafka_mock_cluster: MockCluster,
) -> None:
    """Each mock broker's Metadata v4 answer names the controller set on the cluster, and a new one after
    the controller is moved; a broker taken down stops answering while the others go on."""
    mock = librdkafka_mock_cluster
    mock.set_controller(2)
    events = Events()
    threads = ThreadCheck()
    with MetadataObserver.from_bootstrap(mock.bootstrap_servers, mock.broker_ids, events, interval=0.1,
                                         timeout_s=0.5) as observer:
        wait_until(lambda: {(e["broker"], e["controller"]) for e in events.of("controller.view")}
                   == {(1, 2), (2, 2), (3, 2)}, 10.0, "each mock broker naming controller 2", lambda: events.all)
        mock.broker_down(1)
        mock.set_controller(3)
        wait_until(lambda: all(events.of("controller.view", broker=b)[-1]["controller"] == 3 for b in (2, 3)),
                   10.0, "brokers 2 and 3 naming controller 3", lambda: events.of("controller.view"))
        assert [e["controller"] for e in events.of("controller.view", broker=1)] == [2]
        assert observer.answers[2] > 0 and observer.answers[3] > 0
    threads.assert_back()
