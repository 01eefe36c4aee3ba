"""`migration_brokers.follow`: the copy step's wait until every ZooKeeper-mode broker follows the KRaft controller,
read from what each broker's Metadata names (stand-in answers; the nightly migration runs it on Apache Kafka 3.9.2)."""

from __future__ import annotations

import itertools
import threading
import time

from harness.errors import HarnessError
from harness.faults.migration_brokers import follow


def test_brokers_naming_two_different_controllers_follow_the_kraft_controller() -> None:
    answers = {1: itertools.cycle([1, 1, 3]), 2: itertools.cycle([2, 3])}
    asked: list[int] = []

    def ask(b: int) -> int:
        asked.append(b)
        return next(answers[b])

    assert follow(ask, [1, 2], 5.0, threading.Event()) is None
    assert asked.count(2) == 2  # a broker seen following is not asked again


def test_a_broker_still_naming_its_zookeeper_controller_is_named_when_the_wait_ends() -> None:
    seen = follow(lambda b: 1 if b == 2 else next(rotating), [1, 2], 0.3, threading.Event())
    assert seen == "broker 2 named only controller 1"


rotating = itertools.cycle([1, 2, 3])


def test_a_broker_that_does_not_answer_is_named_with_its_error() -> None:
    def ask(b: int) -> int:
        if b == 3:
            raise HarnessError("broker 3: connection refused")
        return next(rotating)

    seen = follow(ask, [1, 3], 0.3, threading.Event())
    assert seen == "broker 3 did not answer (HarnessError: broker 3: connection refused)"


def test_a_set_stop_ends_the_wait_at_once_saying_what_was_seen() -> None:
    stop = threading.Event()
    stop.set()
    t0 = time.monotonic()
    assert follow(lambda b: 1, [1], 60.0, stop) == "broker 1 named only controller 1"
    assert time.monotonic() - t0 < 5.0
