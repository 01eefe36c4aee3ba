"""Workload and observer constructors: validation names the field and value; no client is created."""

from __future__ import annotations

import pytest

from harness.observe.admin import AdminObserver, ObserverError
from harness.observe.base import Observer
from harness.workload import ConsumerGroupWorkload, ProducerWorkload, WorkloadConfigError
from harness.workload.base import Workload


def sink(event: dict[str, object]) -> None:
    raise AssertionError(f"no event expected from a constructor: {event}")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"rate": 0}, "rate"),
        ({"acks": "2"}, "acks"),
        ({"acks": "1"}, "acks"),  # idempotence needs acks=all
        ({"keys": -1}, "keys"),
        ({"value_base": -5}, "value_base"),
        ({"topic": ""}, "topic"),
    ],
)
def test_producer_rejects_bad_arguments_naming_the_field(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"producer_id": "p0", "topic": "t", "rate": 10.0, **kwargs}
    with pytest.raises(WorkloadConfigError) as info:
        ProducerWorkload("127.0.0.1:1", sink, **args)  # type: ignore[arg-type]
    assert info.value.field == field and f"{field}=" in str(info.value)


def test_producer_accepts_acks_1_without_idempotence_and_is_a_workload() -> None:
    producer = ProducerWorkload("127.0.0.1:1", sink, producer_id="p0", topic="t", rate=5, acks="1", idempotence=False)
    assert isinstance(producer, Workload) and producer.name == "producer:p0" and producer.acks == "1"
    producer.close()  # never started: nothing to release


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"members": 0}, "members"),
        ({"topics": "t"}, "topics"),
        ({"topics": []}, "topics"),
        ({"strategy": "sticky-ish"}, "strategy"),
        ({"commit": "sometimes"}, "commit"),
        ({"group": ""}, "group"),
    ],
)
def test_consumer_group_rejects_bad_arguments_naming_the_field(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"group": "g", "topics": ["t"], "members": 2, **kwargs}
    with pytest.raises(WorkloadConfigError) as info:
        ConsumerGroupWorkload("127.0.0.1:1", sink, **args)  # type: ignore[arg-type]
    assert info.value.field == field


def test_classic_group_sends_the_strategy_and_commit_mode_to_librdkafka() -> None:
    group = ConsumerGroupWorkload(
        "b:1", sink, group="g", topics=["t"], members=3, strategy="cooperative-sticky", commit="sync"
    )
    config = group.client_config
    assert config["partition.assignment.strategy"] == "cooperative-sticky"
    assert config["enable.auto.commit"] is False and group.incremental
    assert isinstance(group, Workload) and group.member_count == 0


def test_a_classic_member_has_a_10s_session_unless_the_experiment_sets_one() -> None:
    """librdkafka#5569: an abandoned pending member holds a rebalance for the session timeout (45 s by default)."""
    group = ConsumerGroupWorkload("b:1", sink, group="g", topics=["t"], members=1)
    assert group.client_config["session.timeout.ms"] == 10_000
    group = ConsumerGroupWorkload("b:1", sink, group="g", topics=["t"], members=1,
                                  extra_config={"session.timeout.ms": "6000"})
    assert group.client_config["session.timeout.ms"] == "6000"


def test_kip848_group_leaves_the_assignor_to_the_broker() -> None:
    group = ConsumerGroupWorkload(
        "b:1", sink, group="g", topics=["t"], members=1, extra_config={"group.protocol": "consumer"}
    )
    assert "partition.assignment.strategy" not in group.client_config and group.incremental
    assert "session.timeout.ms" not in group.client_config  # KIP-848: the broker's group.consumer.session.timeout.ms


def test_eager_range_group_is_not_incremental_and_auto_commits() -> None:
    group = ConsumerGroupWorkload("b:1", sink, group="g", topics=["t"], members=1)
    assert not group.incremental and group.client_config["enable.auto.commit"] is True


def test_admin_observer_validates_its_interval_and_is_an_observer() -> None:
    with pytest.raises(ObserverError, match="interval=0"):
        AdminObserver("b:1", sink, interval=0)
    assert isinstance(AdminObserver("b:1", sink), Observer)
