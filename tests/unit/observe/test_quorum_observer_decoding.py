"""QuorumObserver (and KraftMetadataObserver) against fake controller/broker sockets: in-process TCP servers
that answer ApiVersions, DescribeQuorum, DescribeCluster and DescribeTopicPartitions with kafka-python-encoded
responses, scripted per test (a leader, a follower answering NOT_LEADER_OR_FOLLOWER as Kafka 4.1 does, a zombie,
a closed port, a socket that never answers)."""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kafka.protocol.admin import DescribeTopicPartitionsRequest, DescribeTopicPartitionsResponse
from kafka.protocol.admin.cluster import DescribeClusterResponse, DescribeQuorumResponse
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from harness.errors import HarnessTimeout
from harness.history.events import HistoryEvent, QuorumReplica
from harness.history.jsonl import record_of
from harness.observe.kafka_wire import NodeConnection, Unanswered
from harness.observe.kraft_metadata import KraftMetadataObserver
from harness.observe.quorum import QUORUM_TOPIC, QuorumObserver, decode_quorum
from tests.fixtures.wire import FakeServer, read_frame

_PART = DescribeQuorumResponse.TopicData.PartitionData
_API_VERSIONS = {18: (0, 4), 55: (0, 2), 60: (0, 2), 75: (0, 0)}


def wait_for(cond: Callable[[], Any], timeout_s: float, what: str) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (value := cond()):
        if time.monotonic() > deadline:
            raise HarnessTimeout(what, timeout_s)
        time.sleep(0.02)
    return value


class Events(list[dict[str, Any]]):
    """A sink keeping every event."""

    def __call__(self, event: HistoryEvent | dict[str, Any]) -> None:
        self.append(record_of(event))

    def of(self, type_: str, **match: Any) -> list[dict[str, Any]]:
        return [e for e in list(self) if e["type"] == type_ and all(e.get(k) == v for k, v in match.items())]


def quorum_answer(version: int, *, error: int = 0, leader: int = -1, epoch: int = 0, hw: int = 0,
                  voters: dict[int, int] | None = None, observers: dict[int, int] | None = None) -> Any:
    """A DescribeQuorum response; a follower's is Kafka 4.1's: error 6 with leader 0 / epoch 0 placeholders."""
    if error:
        leader, epoch, hw, voters, observers = 0, 0, 0, {}, {}

    def replicas(d: dict[int, int] | None) -> list[Any]:
        return [_PART.ReplicaState(replica_id=r, log_end_offset=o) for r, o in (d or {}).items()]

    part = _PART(partition_index=0, error_code=error, leader_id=leader, leader_epoch=epoch, high_watermark=hw,
                 current_voters=replicas(voters), observers=replicas(observers))
    topic = DescribeQuorumResponse.TopicData(topic_name=QUORUM_TOPIC, partitions=[part])
    return DescribeQuorumResponse(version=version, error_code=0, topics=[topic], nodes=[])


class FakeNode(FakeServer):
    """A fake Kafka node on a real TCP socket: `answer(api_key, version, request bytes)` builds each response;
    `silent` makes it read requests and never answer (a paused process)."""

    def __init__(self, node_id: int, answer: Callable[[int, int, bytes], Any] | None = None,
                 *, silent: bool = False) -> None:
        super().__init__()
        self.node_id = node_id
        self.answer = answer or (lambda key, version, data: quorum_answer(version, error=6))
        self.silent = silent
        self.requests = 0
        self._open = 0
        self.start()

    @property
    def open_connections(self) -> int:
        with self._lock:
            return self._open

    def serve(self, conn: socket.socket) -> None:
        with self._lock:
            self._open += 1
        try:
            while True:
                data = read_frame(conn)
                key, version, corr = struct.unpack_from(">hhi", data)
                self.requests += 1
                if self.silent:
                    continue
                if key == 18:
                    response: Any = ApiVersionsResponse(version=0, error_code=0, api_keys=[
                        ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                        for k, (lo, hi) in _API_VERSIONS.items()])
                    version = 0
                else:
                    response = self.answer(key, version, data)
                response.with_header(correlation_id=corr)
                conn.sendall(bytes(response.encode(header=True, framed=True)))
        except (EOFError, OSError):
            pass
        finally:
            with self._lock:
                self._open -= 1
            conn.close()


def refused_address() -> str:
    """An address where nothing listens (a killed voter)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


class Script:
    """What a fake controller answers now: a leader at (epoch, hw) or a follower; hw may grow per request."""

    def __init__(self, node_id: int, *, leader_epoch: int | None = None, hw: int = 10, grow: bool = False) -> None:
        self.node_id, self.leader_epoch, self.hw, self.grow = node_id, leader_epoch, hw, grow

    def __call__(self, key: int, version: int, data: bytes) -> Any:
        assert key == 55, key
        if self.leader_epoch is None:
            return quorum_answer(version, error=6)
        if self.grow:
            self.hw += 1
        return quorum_answer(version, leader=self.node_id, epoch=self.leader_epoch, hw=self.hw,
                             voters={101: self.hw, 102: self.hw - 2, 103: -1}, observers={1: self.hw - 5})


@pytest.fixture
def fakes() -> Iterator[list[FakeNode]]:
    made: list[FakeNode] = []
    yield made
    for fake in made:
        fake.close()


def start_controllers(fakes: list[FakeNode], scripts: dict[int, Script]) -> dict[int, str]:
    """One fake controller per script; node id -> its address."""
    fakes += [FakeNode(node, script) for node, script in scripts.items()]
    return {f.node_id: f.address for f in fakes}


def test_decoding_a_followers_answer_keeps_no_leader_from_kafkas_placeholders() -> None:
    response = DescribeQuorumResponse.decode(_frame(quorum_answer(2, error=6)), version=2, header=True)
    view = decode_quorum(102, response)
    assert (view.role, view.leader, view.epoch, view.error) == ("follower", -1, None, "NOT_LEADER_OR_FOLLOWER")
    leader = decode_quorum(101, DescribeQuorumResponse.decode(
        _frame(Script(101, leader_epoch=4)(55, 0, b"")), version=0, header=True))
    assert (leader.role, leader.leader, leader.epoch, leader.high_watermark) == ("leader", 101, 4, 10)
    assert leader.replicas(leader.voters) == (QuorumReplica(101, 10, 0), QuorumReplica(102, 8, 2),
                                              QuorumReplica(103, -1, None))


def _frame(response: Any) -> bytes:
    response.with_header(correlation_id=1)
    return bytes(response.encode(header=True, framed=True))[4:]


@pytest.mark.timeout(30)
def test_leader_change_emits_one_controller_event_each_against_a_fake_controller_socket(
        fakes: list[FakeNode]) -> None:
    scripts = {101: Script(101, leader_epoch=1), 102: Script(102), 103: Script(103)}
    events = Events()
    with QuorumObserver(start_controllers(fakes, scripts), events, interval_s=0.02, name="q") as observer:
        assert observer.wait_leader(5.0) == (101, 1)
        time.sleep(0.3)
        scripts[101].leader_epoch, scripts[102].leader_epoch = None, 2
        assert observer.wait_leader(5.0, other_than=101) == (102, 2)
        wait_for(lambda: events.of("quorum.state", voter=101, role="follower"), 5.0, "101 answering as follower")
        time.sleep(0.3)
    controllers = [(e["broker"], e["epoch"], e["source"], e["src"]) for e in events.of("controller")]
    assert controllers == [(101, 1, "describe_quorum", "q"), (102, 2, "describe_quorum", "q")]
    roles_101 = [(e["role"], e["leader"], e["epoch"]) for e in events.of("quorum.state", voter=101)]
    assert roles_101[0] == ("leader", 101, 1) and roles_101[-1] == ("follower", -1, None)
    assert [e["wall"] for e in events] == sorted(e["wall"] for e in events)


@pytest.mark.timeout(30)
def test_a_zombie_leaders_lower_epoch_emits_no_controller_event_against_a_fake_controller_socket(
        fakes: list[FakeNode]) -> None:
    scripts = {101: Script(101), 102: Script(102, leader_epoch=3), 103: Script(103)}
    events = Events()
    with QuorumObserver(start_controllers(fakes, scripts), events, interval_s=0.02) as observer:
        assert observer.wait_leader(5.0) == (102, 3)
        scripts[101].leader_epoch = 2  # a leader cut off from the majority, still answering as leader
        zombie = wait_for(lambda: events.of("quorum.state", voter=101, role="leader"), 5.0, "the zombie's answer")
        assert zombie[0]["epoch"] == 2 and zombie[0]["high_watermark"] == 10
        time.sleep(0.3)
        assert [(e["broker"], e["epoch"]) for e in events.of("controller")] == [(102, 3)]
        assert observer.leader() == (102, 3)
        scripts[103].leader_epoch = 3  # a second leader in the newest epoch: the split brain is recorded
        wait_for(lambda: len(events.of("controller")) == 2, 5.0, "the second leader of epoch 3")
        time.sleep(0.3)
    assert [(e["broker"], e["epoch"]) for e in events.of("controller")] == [(102, 3), (103, 3)]


@pytest.mark.timeout(30)
def test_a_dead_and_a_paused_voter_do_not_slow_the_leaders_polling_against_a_fake_controller_socket(
        fakes: list[FakeNode]) -> None:
    leader = FakeNode(101, Script(101, leader_epoch=1))
    paused = FakeNode(102, silent=True)
    fakes += [leader, paused]
    voters = {101: leader.address, 102: paused.address, 103: refused_address()}
    events = Events()
    with QuorumObserver(voters, events, interval_s=0.05, timeout_s=0.5) as observer:
        observer.wait_leader(5.0)
        before, started = observer.answers[101], time.monotonic()
        time.sleep(1.5)
        rate = (observer.answers[101] - before) / (time.monotonic() - started)
        assert rate > 4, (rate, observer.answers)  # 20/s at interval 0.05 s; one blocked voter would give < 2
        assert observer.answers[102] == 0 and observer.answers[103] == 0
        assert paused.requests >= 2  # it was asked (ApiVersions), timed out, reconnected, asked again
    errors = {(e["node"], e["error"]) for e in events.of("observer.error")}
    assert (103, "describe_quorum: ConnectionRefusedError") in errors
    assert any(node == 102 and "timeout" in error.lower() for node, error in errors), errors
    assert len(events.of("observer.error")) == len(errors)  # once per (voter, kind)
    assert events.of("quorum.state", voter=101)


@pytest.mark.timeout(30)
def test_a_leaders_high_watermark_is_sampled_once_a_second_against_a_fake_controller_socket(
        fakes: list[FakeNode]) -> None:
    scripts = {101: Script(101, leader_epoch=1, grow=True), 102: Script(102)}
    events = Events()
    with QuorumObserver(start_controllers(fakes, scripts), events, interval_s=0.02) as observer:
        observer.wait_leader(5.0)
        time.sleep(3.3)
    states = events.of("quorum.state", voter=101)
    hws = [e["high_watermark"] for e in states]
    assert 2 <= len(states) <= 5, hws  # at t=0 and about every second (never more often), of ~160 answers
    assert hws == sorted(hws) and len(set(hws)) == len(hws)
    assert observer.answers[101] > 40
    assert all(e["observers"][0]["lag"] == 5 for e in states)
    assert len(events.of("quorum.state", voter=102)) == 1  # a follower's unchanged answer is emitted once


@pytest.mark.timeout(30)
def test_stop_joins_every_thread_and_closes_every_socket_against_a_fake_controller_socket(
        fakes: list[FakeNode]) -> None:
    scripts = {101: Script(101, leader_epoch=1), 102: Script(102)}
    voters = start_controllers(fakes, scripts)
    paused = FakeNode(103, silent=True)
    fakes.append(paused)
    voters[103] = paused.address
    observer = QuorumObserver(voters, Events(), interval_s=0.02, timeout_s=30.0, name="stopper")
    observer.start()
    observer.wait_leader(5.0)
    wait_for(lambda: all(f.open_connections == 1 for f in fakes), 5.0, "one connection to each fake")
    started = time.monotonic()
    observer.stop()
    assert time.monotonic() - started < 15.0  # woken: not the 30 s the paused voter's answer could take
    assert not [t for t in threading.enumerate() if t.name.startswith("observer-stopper")]
    wait_for(lambda: all(f.open_connections == 0 for f in fakes), 5.0, "every connection closed")
    observer.stop()  # idempotent


def test_a_wake_while_connecting_makes_the_call_fail_at_once_against_a_fake_paused_node_socket(
        fakes: list[FakeNode]) -> None:
    """close(wake=True) that lands before the connecting thread stored its socket (nothing to shut down yet)
    still stops that thread: it gives up right after connecting, not after its 30 s read timeout; rearm()
    allows calls again. The paused node is a fake: a real TCP socket that reads and never answers, as a
    SIGSTOPped broker would (the race is in our client, and needs its interleaving forced)."""
    paused = FakeNode(104, silent=True)
    fakes.append(paused)
    conn = NodeConnection(104, paused.address, timeout_s=30.0, client_id="wake-test")
    real_connect = socket.create_connection

    def connect_then_get_woken(*args: Any, **kwargs: Any) -> socket.socket:
        sock = real_connect(*args, **kwargs)
        conn.close(wake=True)  # the stopper runs here: conn.sock is still None
        return sock

    started = time.monotonic()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket, "create_connection", connect_then_get_woken)
        with pytest.raises(Unanswered, match="closed while connecting"):
            conn.call(ApiVersionsRequest, ApiVersionsResponse, 0, lambda v: ApiVersionsRequest(version=v))
    assert time.monotonic() - started < 10.0
    assert conn.sock is None
    with pytest.raises(Unanswered, match="stopping"):
        conn.call(ApiVersionsRequest, ApiVersionsResponse, 0, lambda v: ApiVersionsRequest(version=v))
    conn.rearm()
    conn.timeout_s = 0.3
    with pytest.raises(Unanswered, match="timed out"):  # rearmed: it connects and waits for the answer again
        conn.call(ApiVersionsRequest, ApiVersionsResponse, 0, lambda v: ApiVersionsRequest(version=v))


def broker_answer(brokers: dict[int, bool], partitions: dict[int, tuple[int, int, list[int]]],
                  page: int = 1) -> Callable[[int, int, bytes], Any]:
    """A fake broker: DescribeCluster lists `brokers` (id -> fenced); DescribeTopicPartitions pages `page`
    partitions of topic "t" at a time from `partitions` (id -> (leader, leader_epoch, isr))."""
    B = DescribeClusterResponse.DescribeClusterBroker
    T = DescribeTopicPartitionsResponse.DescribeTopicPartitionsResponseTopic
    P = T.DescribeTopicPartitionsResponsePartition
    topic_id = "9bc4b6ba-3c5e-4b4c-9a52-9d2b8f5a8c11"

    def answer(key: int, version: int, data: bytes) -> Any:
        if key == 60:
            return DescribeClusterResponse(version=version, error_code=0, cluster_id="c", controller_id=1, brokers=[
                B(broker_id=b, host="h", port=9000 + b, is_fenced=f) for b, f in sorted(brokers.items())])
        assert key == 75
        cursor = DescribeTopicPartitionsRequest.decode(data, version=0, header=True).cursor
        first = 0 if cursor is None else cursor.partition_index
        ids = [p for p in sorted(partitions) if p >= first]
        parts = [P(error_code=0, partition_index=p, leader_id=partitions[p][0], leader_epoch=partitions[p][1],
                   replica_nodes=[1, 2], isr_nodes=partitions[p][2], eligible_leader_replicas=[],
                   last_known_elr=None, offline_replicas=[]) for p in ids[:page]]
        more = DescribeTopicPartitionsResponse.Cursor(topic_name="t", partition_index=ids[page]) \
            if len(ids) > page else None
        return DescribeTopicPartitionsResponse(version=0, topics=[
            T(error_code=0, name="t", topic_id=topic_id, is_internal=False, partitions=parts)], next_cursor=more)

    return answer


@pytest.mark.timeout(30)
def test_kraft_observer_pages_refuses_a_lagging_cache_and_reports_fencing_against_fake_broker_sockets(
        fakes: list[FakeNode]) -> None:
    brokers_1 = {1: False, 2: False}
    parts_1 = {0: (1, 5, [1, 2]), 1: (2, 3, [2, 1]), 2: (1, 1, [1, 2])}
    lagging = {0: (2, 4, [2]), 1: (2, 3, [2, 1]), 2: (1, 1, [1, 2])}
    first, second = FakeNode(1, broker_answer(brokers_1, parts_1)), FakeNode(2, broker_answer({2: False}, lagging))
    fakes += [first, second]
    events = Events()
    with KraftMetadataObserver({1: first.address, 2: second.address}, events, interval_s=0.05) as observer:
        wait_for(lambda: len(events.of("partition.state")) == 3, 5.0, "3 partitions over 3 pages")
        brokers_1[2] = True
        wait_for(lambda: events.of("broker.down", broker=2), 5.0, "broker 2 fenced")
        first.close()  # the observer moves on to broker 2, whose cache lags: epoch 4 < 5 is not emitted
        wait_for(lambda: observer.answered_by == 2 and observer.stale_skipped > 0, 5.0, "the lagging answer")
        lagging[0] = (2, 6, [2])
        wait_for(lambda: events.of("partition.state", partition=0, leader_epoch=6), 5.0, "epoch 6")
    kinds = [(e["type"], e.get("broker")) for e in events if e["type"].startswith("broker.")]
    assert kinds[:2] == [("broker.up", 1), ("broker.up", 2)]
    assert kinds[2:4] == [("broker.fenced", 2), ("broker.down", 2)]
    assert ("broker.down", 1) in kinds[4:]  # broker 2's answer no longer lists broker 1
    assert [e["leader_epoch"] for e in events.of("partition.state", partition=0)] == [5, 6]
    assert events.of("partition.state", partition=0)[0] | {"wall": 0} == {
        "type": "partition.state", "src": "kraft", "wall": 0, "topic": "t", "partition": 0, "leader": 1,
        "leader_epoch": 5, "isr": [1, 2], "replicas": [1, 2], "controller_epoch": None, "elr": [],
        "last_known_elr": None, "error": None}
