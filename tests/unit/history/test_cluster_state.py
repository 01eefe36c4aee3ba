"""The engine's cluster view (`ClusterState`) folds observations by their epochs, not by their arrival: what a
source with epochs (ZooKeeper, DescribeTopicPartitions, DescribeQuorum) said is not replaced by a lagging view."""

from __future__ import annotations

from harness.history.state import ClusterState

ZK_LED_BY_3 = {"type": "partition.state", "src": "zk", "topic": "orders", "partition": 1, "leader": 3,
               "leader_epoch": 2, "isr": [3], "replicas": [1, 2, 3], "controller_epoch": 2}
ADMIN_LEADERLESS = {"type": "partition.state", "src": "admin", "topic": "orders", "partition": 1, "leader": -1,
                    "leader_epoch": None, "isr": [3], "replicas": [1, 2, 3], "controller_epoch": None,
                    "error": "LEADER_NOT_AVAILABLE"}


def test_a_lagging_admin_view_without_an_epoch_does_not_unset_a_leader_zookeeper_elected() -> None:
    s = ClusterState()
    s.apply(ZK_LED_BY_3)
    s.apply(ADMIN_LEADERLESS)  # a broker's Metadata cache, behind the controller's write (seen on 3.9.2)
    assert s.leader("orders", 1) == 3
    assert s.events_seen == 2


def test_a_lower_leader_epoch_does_not_replace_a_higher_one_but_an_equal_one_does() -> None:
    s = ClusterState()
    s.apply(ZK_LED_BY_3)
    s.apply({**ZK_LED_BY_3, "leader": 1, "leader_epoch": 1, "isr": [1, 2, 3]})
    assert s.leader("orders", 1) == 3
    s.apply({**ZK_LED_BY_3, "isr": [3, 2]})  # an ISR change keeps the leader epoch
    assert s.partitions[("orders", 1)].isr == (3, 2)
    s.apply({**ZK_LED_BY_3, "leader": 2, "leader_epoch": 3, "isr": [2]})
    assert s.leader("orders", 1) == 2


def test_without_a_source_of_epochs_the_latest_observation_wins() -> None:
    s = ClusterState()
    s.apply({**ADMIN_LEADERLESS, "leader": 2, "error": None})
    s.apply(ADMIN_LEADERLESS)
    assert s.leader("orders", 1) is None
    s.apply({**ADMIN_LEADERLESS, "leader": 3, "error": None})
    assert s.leader("orders", 1) == 3


def test_the_controller_follows_its_epoch_and_ignores_an_epochless_view_once_one_is_known() -> None:
    s = ClusterState()
    s.apply({"type": "controller", "src": "admin", "broker": 1, "epoch": None, "source": "describe_cluster"})
    assert s.controller == 1  # the only view so far
    s.apply({"type": "controller", "src": "zk", "broker": 2, "epoch": 4})
    s.apply({"type": "controller", "src": "admin", "broker": 1, "epoch": None, "source": "describe_cluster"})
    assert (s.controller, s.controller_epoch) == (2, 4)
    s.apply({"type": "controller", "src": "zk", "broker": -1, "epoch": 4})  # /controller deleted: its last epoch
    assert s.controller is None
    s.apply({"type": "controller", "src": "zk", "broker": 1, "epoch": 3})
    assert s.controller is None
    s.apply({"type": "controller", "src": "zk", "broker": 3, "epoch": 5})
    assert (s.controller, s.controller_epoch) == (3, 5)


def test_epochs_of_different_sources_are_not_compared() -> None:
    """A migration: ZooKeeper's controller epoch and the KRaft quorum's leader epoch count apart."""
    s = ClusterState()
    s.apply({"type": "controller", "src": "zk", "broker": 1, "epoch": 7})
    s.apply({"type": "controller", "src": "quorum", "broker": 3000, "epoch": 2, "source": "describe_quorum"})
    assert (s.controller, s.controller_epoch) == (3000, 2)
    s.apply({"type": "controller", "src": "quorum", "broker": 3001, "epoch": 1, "source": "describe_quorum"})
    assert s.controller == 3000
    s.apply({**ZK_LED_BY_3, "src": "kraft", "leader": 1, "leader_epoch": 1, "controller_epoch": None})
    assert s.leader("orders", 1) == 1
