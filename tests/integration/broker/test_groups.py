"""Integration: consumer groups of real librdkafka consumers (separate processes) on a reference broker."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from harness.broker.offsets import GroupRecord, decode_group_record
from harness.broker.topics import OFFSETS_TOPIC
from harness.model.assignors import range_assign
from harness.model.coordinator import coordinator_partition
from tests.fixtures.broker import REPO, ReferenceBroker

pytestmark = pytest.mark.integration
SESSION_MS = 6000
TOPIC, PARTITIONS = "orders", 6


class ConsumerProc:
    """One consumer process; its JSON events are collected by a reader thread."""

    def __init__(self, bs: str, group: str, topic: str, instance: str | None = None) -> None:
        args = [sys.executable, "-m", "tests.integration.broker.consumer_proc", bs, group, topic, str(SESSION_MS)]
        if instance:
            args.append(instance)
        self.proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     start_new_session=True)
        self.events: list[dict[str, Any]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.events.append(json.loads(line))

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self) -> None:
        os.killpg(self.proc.pid, signal.SIGTERM)
        self.proc.wait(20)
        self._reader.join(5)


@pytest.fixture
def consumers() -> Iterator[Callable[..., ConsumerProc]]:
    procs: list[ConsumerProc] = []

    def make(*args: Any, **kw: Any) -> ConsumerProc:
        procs.append(ConsumerProc(*args, **kw))
        return procs[-1]

    yield make
    for p in procs:
        p.kill()


def describe(admin: AdminClient, group: str) -> Any:
    return admin.describe_consumer_groups([group])[group].result(10)


def wait_stable(admin: AdminClient, group: str, members: int, timeout_s: float = 30) -> Any:
    """The group Stable with `members` members whose assignments cover every partition once."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = describe(admin, group)
        owned = [(tp.topic, tp.partition) for m in last.members for tp in m.assignment.topic_partitions]
        if (last.state == ConsumerGroupState.STABLE and len(last.members) == members
                and sorted(owned) == [(TOPIC, p) for p in range(PARTITIONS)]):
            return last
        time.sleep(0.2)
    raise AssertionError(f"group {group} not Stable with {members} members: {last and last.state} "
                         f"{last and [(m.member_id, m.assignment.topic_partitions) for m in last.members]}")


def check_range(desc: Any) -> None:
    """The live assignment equals the model's librdkafka range assignment for these member ids."""
    actual = {m.member_id: sorted((tp.topic, tp.partition) for tp in m.assignment.topic_partitions)
              for m in desc.members}
    assert desc.partition_assignor == "range"
    assert actual == range_assign(list(actual), {TOPIC: PARTITIONS})


def group_records(bs: str, group: str) -> list[GroupRecord]:
    """Every group-metadata record of `group` in its `__consumer_offsets` partition, in log order."""
    c = Consumer({"bootstrap.servers": bs, "group.id": "observer", "enable.auto.commit": False})
    tp = TopicPartition(OFFSETS_TOPIC, coordinator_partition(group, 5), 0)
    _low, high = c.get_watermark_offsets(tp, timeout=10)
    c.assign([tp])
    out = []
    deadline = time.monotonic() + 20
    pos = 0
    while pos < high and time.monotonic() < deadline:
        for m in c.consume(500, 0.5):
            if m.error() is not None:
                continue
            pos = (m.offset() or 0) + 1
            rec = decode_group_record(m.key() or b"", m.value())
            if rec is not None and rec.group == group:
                out.append(rec)
    c.close()
    return out


def test_group_of_three_rebalances_on_sigkill_by_session_timeout_and_on_clean_leave(
        reference_broker_factory: Callable[..., ReferenceBroker], consumers: Callable[..., ConsumerProc]) -> None:
    """3 consumers share 6 partitions by range; SIGKILL of one rebalances after session.timeout.ms,
    a clean close rebalances at once; generations increase and assignments match the model."""
    broker = reference_broker_factory({"group.initial.rebalance.delay.ms": "1500"})
    bs = broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(15)
    procs = [consumers(bs, "billing", TOPIC) for _ in range(3)]

    desc3 = wait_stable(admin, "billing", 3)
    check_range(desc3)

    victim = next(p for p in procs if p.events)
    killed_at = time.monotonic()
    victim.kill()
    desc2 = wait_stable(admin, "billing", 2)
    took = time.monotonic() - killed_at
    assert took >= SESSION_MS / 1000 - 1.5, f"rebalanced {took:.1f}s after SIGKILL: not a session expiry"
    check_range(desc2)

    leaver = next(p for p in procs if p is not victim)
    left_at = time.monotonic()
    leaver.terminate()
    assert leaver.events[-1]["event"] == "closed"
    desc1 = wait_stable(admin, "billing", 1)
    assert time.monotonic() - left_at < SESSION_MS / 1000, "a clean leave must not wait for the session timeout"
    check_range(desc1)

    records = group_records(bs, "billing")
    gens = [r.generation for r in records]
    assert gens == sorted(set(gens)) and len(gens) >= 3, gens
    assert set(records[-1].members) == {m.member_id for m in desc1.members}
    assert any(set(r.members) == {m.member_id for m in desc2.members} for r in records)
    assert any(set(r.members) == {m.member_id for m in desc3.members} for r in records)
    assert all(r.protocol == "range" for r in records if r.members)


def test_committed_offsets_survive_clean_restart_and_kill9(reference_broker: ReferenceBroker) -> None:
    """Offsets committed through the group coordinator are served again after SIGTERM and after SIGKILL restarts."""
    bs = reference_broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic("ledger", 3, 1)])["ledger"].result(15)
    wanted = [TopicPartition("ledger", 0, 11), TopicPartition("ledger", 1, 22), TopicPartition("ledger", 2, 33)]
    c = Consumer({"bootstrap.servers": bs, "group.id": "accounts", "enable.auto.commit": False})
    c.commit(offsets=wanted, asynchronous=False)
    c.close()

    def committed() -> list[int]:
        cons = Consumer({"bootstrap.servers": bs, "group.id": "accounts"})
        try:
            return [tp.offset for tp in cons.committed([TopicPartition("ledger", p) for p in range(3)], timeout=15)]
        finally:
            cons.close()

    assert committed() == [11, 22, 33]
    reference_broker.stop()
    reference_broker.start()
    assert committed() == [11, 22, 33]
    reference_broker.kill()
    reference_broker.start()
    assert committed() == [11, 22, 33]


def test_static_member_restart_within_session_keeps_its_assignment(
        reference_broker: ReferenceBroker, consumers: Callable[..., ConsumerProc]) -> None:
    """A static member (group.instance.id) killed and restarted within session.timeout.ms gets the same
    partitions back without the group changing generation."""
    bs = reference_broker.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(15)
    a = consumers(bs, "static", TOPIC, instance="inst-a")
    consumers(bs, "static", TOPIC, instance="inst-b")
    before = wait_stable(admin, "static", 2)
    gens_before = [r.generation for r in group_records(bs, "static")]
    mine = sorted((tp.topic, tp.partition) for m in before.members if m.group_instance_id == "inst-a"
                  for tp in m.assignment.topic_partitions)
    a.kill()
    a2 = consumers(bs, "static", TOPIC, instance="inst-a")
    deadline = time.monotonic() + 20
    while not any(e["event"] == "assign" for e in a2.events) and time.monotonic() < deadline:
        time.sleep(0.1)
    got = [tuple(x) for e in a2.events if e["event"] == "assign" for x in e["partitions"]]
    after = wait_stable(admin, "static", 2)
    assert mine and sorted(got) == mine
    assert {m.group_instance_id for m in after.members} == {"inst-a", "inst-b"}
    assert [r.generation for r in group_records(bs, "static")][-1] == gens_before[-1]
