"""KRaft clusters of Apache Kafka 4.x on the process backend, dedicated controllers and combined voters: every
connection between two nodes passes that pair's own Toxiproxy proxy (so a link fault acts on exactly one
directed link), a cut quorum link is felt, and killed voters and brokers come back."""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from harness.cluster.base import ClusterSpec, NodeId
from harness.cluster.process_backend import ProcessBackend, ProcessCluster
from harness.install.kafka import DEFAULT_KRAFT_LINE
from harness.observe.quorum import QuorumObserver
from harness.workload.common import LIBRDKAFKA_LOGGER
from tests.fixtures.process_cluster import APACHE_KAFKA, apache_kafka

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ELECTION_S = 60.0
"""Generous: followers wait controller.quorum.fetch.timeout.ms (2 s) and an election timeout (1-2 s) on an idle
machine; a loaded 2-core one can take several times that."""


@pytest.fixture(scope="module", params=["dedicated", "combined"])
def kraft(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProcessCluster]:
    apache_kafka(DEFAULT_KRAFT_LINE)
    spec = ClusterSpec(brokers=3, zookeepers=0, mode="kraft", controllers=3, combined=request.param == "combined",
                       kafka_version=DEFAULT_KRAFT_LINE, broker=APACHE_KAFKA, ready_timeout_s=180)
    with ProcessBackend().up(spec, tmp_path_factory.mktemp(f"kraft-{request.param}")) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers, "logger": LIBRDKAFKA_LOGGER})
        admin.create_topics([NewTopic("t", 3, 3)])["t"].result(60)
        yield cluster


def _listening() -> dict[int, int]:
    out: dict[int, int] = {}
    for line in subprocess.run(["ss", "-tlnpH"], capture_output=True, text=True, check=True).stdout.splitlines():
        m = re.search(r":(\d+)\s.*pid=(\d+)", line)
        if m:
            out[int(m.group(1))] = int(m.group(2))
    return out


def _node_to_node_connections(cluster: ProcessCluster) -> tuple[int, list[str]]:
    """(connections from a node to a proxy, connections from a node straight to another node)."""
    pids = {cluster.pid(n): str(n) for n in cluster.nodes}
    listening = _listening()
    proxied, direct = 0, []
    established = subprocess.run(["ss", "-tnpH", "state", "established"], capture_output=True, text=True,
                                 check=True).stdout
    for line in established.splitlines():
        m = re.search(r"pid=(\d+)", line)
        parts = line.split()
        if not m or int(m.group(1)) not in pids or len(parts) < 4:
            continue
        pid, local, remote = int(m.group(1)), int(parts[2].rsplit(":", 1)[1]), int(parts[3].rsplit(":", 1)[1])
        if listening.get(local) == pid or listening.get(remote) == pid:
            continue  # the accepting side, or a node talking to itself
        owner = listening.get(remote)
        if owner in pids:
            direct.append(f"{pids[pid]} -> {pids[owner]} (port {remote})")
        elif owner is not None:
            proxied += 1
    return proxied, direct


def test_every_connection_between_nodes_passes_its_own_proxy(kraft: ProcessCluster) -> None:
    """Kafka 4 dials the quorum leader at the endpoint it advertises for the dialer's controller listener
    (KIP-853), not at controller.quorum.voters: without one controller listener per dialer, brokers and
    followers would bypass the proxies and a cut quorum link would cut nothing."""
    deadline = time.monotonic() + 60.0  # until the brokers' fetchers and heartbeats are connected
    proxied, direct = _node_to_node_connections(kraft)
    while proxied < 6 and not direct and time.monotonic() < deadline:
        time.sleep(0.5)
        proxied, direct = _node_to_node_connections(kraft)
    assert not direct, direct
    assert proxied >= 6, proxied


def test_killing_the_quorum_leader_elects_another_voter_and_it_comes_back(kraft: ProcessCluster) -> None:
    combined = kraft.spec.combined
    with QuorumObserver(kraft.quorum_voters, lambda _event: None) as observer:
        leader, epoch = observer.wait_leader(ELECTION_S)
        node = NodeId.broker(leader) if combined else NodeId.controller(leader)
        kraft.kill(node)
        new_leader, new_epoch = observer.wait_leader(ELECTION_S, other_than=leader)
        assert new_leader != leader and new_epoch > epoch
        kraft.start(node)
        assert kraft.is_running(node)


def test_cutting_a_followers_links_to_the_leader_is_felt_and_healed(kraft: ProcessCluster) -> None:
    """Cutting every link into the leader from the other voters makes it resign (check-quorum) and another
    voter take over at a higher epoch; re-enabling them restores a quorum."""
    combined = kraft.spec.combined
    as_node = (lambda v: NodeId.broker(v)) if combined else (lambda v: NodeId.controller(v))
    with QuorumObserver(kraft.quorum_voters, lambda _event: None) as observer:
        leader, epoch = observer.wait_leader(ELECTION_S)
        others = [v for v in kraft.quorum_voters if v != leader]
        links = [kraft.link(as_node(v), as_node(leader)) for v in others]
        links += [kraft.link(as_node(leader), as_node(v)) for v in others]
        for link in links:
            link.disable()
        try:
            new_leader, new_epoch = observer.wait_leader(ELECTION_S, other_than=leader)
            assert new_leader in others and new_epoch > epoch
        finally:
            for link in links:
                link.enable()
        assert observer.wait_leader(ELECTION_S)[1] >= new_epoch


def test_a_kraft_cluster_leaves_its_layout_and_quorum_in_describe(kraft: ProcessCluster) -> None:
    info = kraft.describe()
    assert info["mode"] == "kraft" and info["kraft"]["voters"] == sorted(kraft.quorum_voters)  # type: ignore[index]
    assert len(info["kraft"]["cluster_id"]) == 22  # type: ignore[index,arg-type]
    assert not kraft.zookeeper_connect and len(kraft.broker_addresses) == 3
