"""`txn_coordinator:<transactional id>`: parsed, printed and resolved as Kafka maps the id to a
`__transaction_state` partition (Java's String.hashCode, Utils.abs, modulo the partition count)."""

from __future__ import annotations

import pytest

from harness.cluster.base import NodeId
from harness.faults.resolve import ResolutionError, resolve_node, transaction_state_partition
from harness.faults.targets import TargetSyntaxError, parse_target
from harness.history.state import ClusterState


@pytest.mark.parametrize(("tid", "java_hash"), [
    ("a", 97), ("kafka-chaos-payments-api", -1194899794), ("zzzzzzzzzzzzzzzzzzzzzzzzzé€", 682069981), ("", 0)])
def test_the_partition_is_the_java_hash_of_the_id_made_positive_modulo_the_partition_count(
    tid: str, java_hash: int,
) -> None:
    """The hashes are what `jshell` printed for `"<id>".hashCode()` (Java 17)."""
    for partitions in (1, 6, 50):
        assert transaction_state_partition(tid, partitions) == abs(java_hash) % partitions


def test_a_hash_of_integer_min_value_maps_to_partition_0_as_utils_abs_does() -> None:
    """"polygenelubricants".hashCode() is Integer.MIN_VALUE, which Utils.abs maps to 0 (Math.abs would not)."""
    assert transaction_state_partition("polygenelubricants", 7) == 0


def test_the_target_prints_as_written_and_rejects_a_missing_id() -> None:
    t = parse_target("txn_coordinator:payments-tx")
    assert (t.kind, t.transactional_id, str(t), t.role, t.is_static) == (
        "txn-coordinator", "payments-tx", "txn_coordinator:payments-tx", "broker", False)
    with pytest.raises(TargetSyntaxError, match="txn_coordinator:<transactional id>"):
        parse_target("txn_coordinator:")


def test_it_resolves_to_the_leader_of_the_ids_partition_once_the_topic_is_observed() -> None:
    s = ClusterState()
    target = parse_target("txn_coordinator:kafka-chaos-payments-api")
    with pytest.raises(ResolutionError, match="has not been observed yet"):
        resolve_node(target, s)
    for p in range(6):  # the id maps to partition 4 of 6
        s.apply({"type": "partition.state", "topic": "__transaction_state", "partition": p, "leader": 1 + p % 3,
                 "leader_epoch": 0, "isr": [1, 2, 3], "replicas": [1, 2, 3]})
    assert resolve_node(target, s) == NodeId.broker(2)
    s.apply({"type": "partition.state", "topic": "__transaction_state", "partition": 4, "leader": -1,
             "leader_epoch": 1, "isr": [], "replicas": [1, 2, 3]})
    with pytest.raises(ResolutionError, match="__transaction_state/4 has no leader"):
        resolve_node(target, s)
