"""The typed history events: each renders exactly the record its emitter wrote before the classes existed, and
reads back from it (`parse_event`), so history lines, the Parquet copy and every verdict stay as they were."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.history.events import (
    EVENT_CLASSES,
    ClientRef,
    FaultStart,
    LinkRef,
    NodeId,
    PartitionState,
    parse_event,
    parse_target,
)
from harness.history.jsonl import iter_lines, read_history

RECORDS: list[dict[str, Any]] = [
    # engine (harness/engine/runner.py, harness/faults/operations.py, harness/faults/inject.py)
    {"src": "engine", "type": "run.start", "experiment": "e", "variant": None, "backend": "process", "seed": 7},
    {"src": "engine", "type": "run.end", "status": "completed", "error": None},
    {"src": "engine", "type": "run.error", "error": "teardown: x"},
    {"src": "engine", "type": "phase", "name": "chaos"},
    {"src": "engine", "type": "signal", "signal": "SIGTERM"},
    {"src": "engine", "type": "probe", "name": "isr_full", "ok": True, "detail": "every ISR full", "when": "before"},
    {"src": "engine", "type": "fault.error", "fault_id": 2, "kind": "kill", "action": "inject", "error": "x"},
    {"src": "engine", "type": "fault.error", "action": "heal", "error": "x"},
    {"src": "engine", "type": "fault.start", "fault_id": 0, "kind": "cut", "target": ["1->2", "client->3", "2->zk1"],
     "brokers": [], "params": {"one_way": True}, "description": "cut 1->2", "heal": "restore", "wall": 1700000000000},
    {"src": "engine", "type": "fault.start", "fault_id": "3.1", "kind": "stop",
     "target": ["broker:2", "controller:101", "consumer:g/0", "producer:p1"], "brokers": [2], "params": {},
     "description": "stop", "heal": "start"},
    {"src": "engine", "type": "fault.end", "fault_id": 0, "kind": "kill", "target": ["broker:1"], "brokers": [1],
     "params": {}, "description": "kill broker:1"},
    {"src": "engine", "type": "fault.end", "fault_id": 0, "kind": "kill", "target": ["broker:1"], "brokers": [1],
     "params": {}, "description": "kill broker:1", "error": "heal: start: boom"},
    {"src": "engine", "type": "fault.skipped", "fault_id": 1, "kind": "kill", "target": [], "brokers": [],
     "params": {}, "description": "kill leader:t/0", "error": "no leader"},
    {"src": "engine", "type": "op.start", "op_id": 1, "action": "reassign", "topic": "t", "partitions": [["t", "0"]],
     "reassignment": [{"partition": 0, "replicas": [2, 3]}], "timeout_s": 30.0, "description": "reassign t"},
    {"src": "engine", "type": "op.start", "op_id": 2, "action": "scale_consumers", "topic": None, "group": "g",
     "partitions": [], "reassignment": [], "brokers": [1, 2], "producer": "p", "timeout_s": 30, "description": "d"},
    {"src": "engine", "type": "op.end", "op_id": 1, "action": "reassign", "topic": "t", "outcome": "done",
     "via": "AlterPartitionReassignments", "detail": "x", "elapsed_s": 1.234,
     "results": [{"topic": "t", "partition": 0, "error": None, "replicas": [2, 3]},
                 {"topic": "t", "partition": 1, "error": "E"}], "description": "reassign t"},
    {"src": "engine", "type": "op.end", "op_id": 1, "action": "scale_consumers", "topic": None, "group": "g",
     "outcome": "error", "via": "", "detail": "abandoned", "elapsed_s": 0.0, "results": [], "description": "d"},
    # observers
    {"type": "controller", "src": "zk", "wall": 1.5, "broker": -1, "epoch": None},
    {"broker": 2, "epoch": None, "source": "describe_cluster", "type": "controller", "src": "admin", "wall": 3},
    {"type": "controller.view", "src": "metadata", "wall": 2.25, "broker": 1, "controller": 2},
    {"type": "quorum.state", "src": "quorum", "wall": 1.0, "voter": 101, "leader": 101, "epoch": 3, "role": "leader",
     "high_watermark": 40, "voters": [{"id": 101, "log_end_offset": 40, "lag": 0}],
     "observers": [{"id": 1, "log_end_offset": -1, "lag": None}], "error": None},
    {"type": "broker.up", "src": "zk", "wall": 1.0, "broker": 1},
    {"broker": 1, "host": "localhost", "port": 9092, "type": "broker.up", "src": "admin", "wall": 1},
    {"type": "broker.down", "src": "kraft", "wall": 1.0, "broker": 1},
    {"type": "broker.fenced", "src": "kraft", "wall": 1.0, "broker": 1},
    {"type": "broker.unfenced", "src": "kraft", "wall": 1.0, "broker": 1},
    {"type": "partition.state", "src": "zk", "wall": 1.0, "topic": "t", "partition": 0, "leader": 1,
     "leader_epoch": 4, "isr": [1, 2], "replicas": None, "controller_epoch": 2, "leader_recovery_state": 1},
    {"topic": "t", "partition": 0, "leader": -1, "leader_epoch": None, "isr": [], "replicas": [1, 2],
     "controller_epoch": None, "error": "LEADER_NOT_AVAILABLE", "type": "partition.state", "src": "admin", "wall": 5},
    {"type": "partition.state", "src": "kraft", "wall": 1.0, "topic": "t", "partition": 0, "leader": 1,
     "leader_epoch": 4, "isr": [1], "replicas": [1, 2], "controller_epoch": None, "elr": None, "last_known_elr": [2],
     "error": None},
    {"group": "g", "state": "Stable", "generation": None, "coordinator": 2, "leader": None, "protocol": "range",
     "members": [{"member_id": "m", "client_id": "c", "host": "/h", "assignment": [["t", 0]]}],
     "group_type": "classic", "type": "group.state", "src": "admin", "wall": 9},
    {"type": "observer.error", "src": "zk", "wall": 1.0, "observer": "zk", "error": "x"},
    {"observer": "admin", "call": "describe_cluster", "error": "describe_cluster: timeout", "detail": "d",
     "type": "observer.error", "src": "admin", "wall": 1},
    {"type": "observer.error", "src": "kraft", "wall": 1.0, "observer": "kraft", "call": "c", "error": "e",
     "detail": "d", "node": 101},
    # workloads
    {"src": "producer:p", "producer": "p", "value": 5, "key": None, "topic": "t", "acks": "all", "type": "send",
     "wall": 10},
    {"src": "producer:p", "producer": "p", "value": 5, "key": "k1", "topic": "t", "acks": "all", "txn": 3,
     "zombie": True, "type": "send", "wall": 10},
    {"src": "pipeline:x", "producer": "x", "value": 5, "key": None, "topic": "t", "acks": "all", "txn": 3,
     "input_value": 9, "type": "ack", "wall": 10, "partition": 0, "offset": None, "latency_ms": None},
    {"src": "producer:p", "producer": "p", "value": 5, "key": None, "topic": "t", "acks": "1", "type": "send.error",
     "wall": 11, "error": "_QUEUE_FULL", "error_detail": "x", "retriable": True, "fatal": False, "definite": True},
    {"src": "producer:p", "producer": "p", "value": 5, "key": None, "topic": "t", "acks": "1", "partition": 2,
     "latency_ms": 3.5, "type": "send.error", "wall": 11, "error": "_MSG_TIMED_OUT", "error_detail": "x",
     "retriable": True, "fatal": False, "definite": False},
    {"type": "client.error", "src": "producer:p", "wall": 1, "client": "producer:p", "error": "_ALL_BROKERS_DOWN",
     "error_detail": "x", "fatal": False},
    {"client": "consumer:c", "error": "E", "error_detail": "x", "fatal": True, "type": "client.error",
     "src": "consumer:c", "wall": 1, "consumer": "c", "group": "g", "member": None},
    {"type": "client.crash", "src": "consumer:g/0", "wall": 1, "client": "consumer:g/0", "exit_code": -9,
     "last_words": "java.lang.OutOfMemoryError: Java heap space"},
    {"type": "txn.begin", "src": "producer:p", "wall": 1, "producer": "p", "transactional_id": "tid", "txn": 0},
    {"type": "txn.commit", "src": "producer:p", "wall": 1, "producer": "p", "transactional_id": "tid", "txn": 0,
     "outcome": "committed", "definite": True, "error": None, "error_detail": None},
    {"type": "txn.commit", "src": "pipeline:x", "wall": 1, "producer": "x", "transactional_id": "tid", "txn": 0,
     "outcome": "unknown", "definite": False, "error": "E", "error_detail": "d", "offsets": [["in", 0, 12]]},
    {"type": "txn.abort", "src": "producer:p", "wall": 1, "producer": "p", "transactional_id": "tid", "txn": 1,
     "outcome": "aborted", "definite": True, "error": None, "error_detail": None},
    {"type": "txn.zombie", "src": "producer:p", "wall": 1, "producer": "p", "transactional_id": "tid", "txn": 1,
     "outcome": "fenced", "error": "_FENCED", "error_detail": "d"},
    {"type": "txn.fenced", "src": "producer:p", "wall": 1, "producer": "p", "transactional_id": "tid", "txn": None,
     "error": "_FENCED", "error_detail": "d", "open_ms": None, "timeout_ms": 2000},
    {"type": "pipe.read", "src": "pipeline:x", "wall": 1, "pipeline": "x", "group": "g", "topic": "in",
     "partition": 0, "offset": 4, "value": 7, "txn": 2},
    {"topic": "t", "partition": 0, "offset": 3, "value": "foreign", "key": None, "isolation": "read_committed",
     "type": "poll", "src": "consumer:c", "wall": 1, "consumer": "c", "group": "g", "member": "m"},
    {"generation": 3, "topic": "t", "partition": 0, "offset": 4, "type": "commit", "src": "consumer:c", "wall": 1,
     "consumer": "c", "group": "g", "member": "m"},
    {"generation": 3, "error": "partition errors", "partitions": [["t", 0, "E"]], "type": "commit.error",
     "src": "consumer:c", "wall": 1, "consumer": "c", "group": "g", "member": "m"},
    {"generation": None, "error": "E", "error_detail": "x", "type": "commit.error", "src": "consumer:c", "wall": 1,
     "consumer": "c", "group": "g", "member": None},
    {"error": "E", "error_detail": "x", "fatal": False, "type": "consumer.error", "src": "consumer:c", "wall": 1,
     "consumer": "c", "group": "g", "member": "m"},
    {"generation": 1, "partitions": [["t", 0]], "incremental": False, "assignment": [["t", 0], ["t", 1]],
     "type": "assign", "src": "consumer:c", "wall": 1, "consumer": "c", "group": "g", "member": "m"},
    {"generation": 1, "partitions": [["t", 0]], "incremental": True, "assignment": [], "lost": True,
     "type": "revoke", "src": "consumer:c", "wall": 1, "consumer": "c", "group": "g", "member": "m"},
    {"type": "group.drain", "src": "group:g", "wall": 1, "group": "g", "ok": False, "detail": "member 0: paused"},
]
"""One record per shape each emitter writes (keys and value shapes as the emitters build them)."""


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: str(r["type"]))
def test_an_event_renders_the_record_it_was_read_from(record: dict[str, Any]) -> None:
    event = parse_event(record)
    assert event is not None and record["type"] == event.TYPE
    assert event.to_json() == record
    assert type(event).from_json(event.to_json()) == event


def test_every_event_type_has_a_record_here() -> None:
    assert set(EVENT_CLASSES) == {r["type"] for r in RECORDS}


def test_an_unknown_field_is_ignored_and_an_unknown_type_is_none() -> None:
    event = parse_event({"type": "phase", "src": "engine", "name": "heal", "extra": 1})
    assert event is not None and event.to_json() == {"type": "phase", "src": "engine", "name": "heal"}
    assert parse_event({"type": "nonesuch", "src": "x"}) is None
    assert parse_event({"type": "fault.start", "src": "engine", "target": ["broker:x->"], "fault_id": 0}) is None
    assert parse_event({"type": "group.state", "src": "admin", "members": [{"member_id": "m"}]}) is None


def test_targets_are_structured() -> None:
    event = FaultStart.from_json(RECORDS[8])
    assert event.target == (LinkRef(NodeId("broker", 1), NodeId("broker", 2)),
                            LinkRef(None, NodeId("broker", 3)), LinkRef(NodeId("broker", 2), NodeId("zookeeper", 1)))
    assert parse_target("controller:101") == NodeId("controller", 101)
    assert parse_target("101->102") == LinkRef(NodeId("controller", 101), NodeId("controller", 102))
    assert parse_target("consumer:g/0") == ClientRef("consumer", "g/0")


def test_events_are_frozen_and_slotted() -> None:
    for cls in EVENT_CLASSES.values():
        assert "__slots__" in cls.__dict__ and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    state = PartitionState(src="zk", topic="t", partition=0, leader=1, leader_epoch=0, isr=(1,), replicas=(1,),
                           controller_epoch=1)
    with pytest.raises(AttributeError):
        state.leader = 2  # type: ignore[misc]


def test_the_tolerant_reader_skips_blank_lines_and_hands_on_torn_ones(tmp_path: Path) -> None:
    history = tmp_path / "history.jsonl"
    history.write_bytes(b'{"type":"phase","src":"engine","name":"setup"}\n\n  \n[1,2]\n{"type":"phase","src":"eng')
    lines = list(iter_lines(history))
    assert [(line.number, line.record is None) for line in lines] == [(1, False), (4, True), (5, True)]
    assert lines[2].text == '{"type":"phase","src":"eng'
    result = read_history(history)
    assert len(result.events) == 1 and result.skipped_lines == [4, 5] and result.truncated_tail
