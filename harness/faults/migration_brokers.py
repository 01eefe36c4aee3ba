"""After a migration's metadata copy: wait until every ZooKeeper-mode broker follows the KRaft controller, before the
brokers roll into KRaft (`migrate_to_kraft`'s `copy` step; docs/apache-kafka.md, "A broker rolled right after the
copy shuts down uncleanly").

Why: a ZooKeeper-mode broker chooses its controlled shutdown's path once, when it begins (`KafkaServer.
controlledShutdown` at 3.9): through the KRaft controller (a heartbeat asking to shut down) only if its metadata cache
already names a KRaft controller, else a ControlledShutdown request to the ZooKeeper controller it knows. Stopped in
the moment between the KRaft controller's claim of `/controller` and its first UpdateMetadata to that broker, it asks
the ZooKeeper controller that has just resigned, `controlled.shutdown.max.retries` times
`controlled.shutdown.retry.backoff.ms` apart (3 x 5 s by default), always STALE_CONTROLLER_EPOCH, then shuts down
uncleanly; the KRaft controller moves its leaderships only when its session times out (`broker.session.timeout.ms`,
9 s). Measured on 3.9.2: broker 1, stopped 0.01 s after the copy ended, left its partitions leaderless 8.6 s longer.

How it is seen: a broker's Metadata answer names the ZooKeeper controller it last heard from, always the same id,
until it follows a KRaft controller; from then on it names a random live broker on every answer (`KafkaApis`,
`KRaftCachedControllerId`). So a broker that has named two different controllers since the copy ended follows the
KRaft controller. With one live broker the answer cannot vary; the wait then ends at its timeout, and says so.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

from harness.cluster.client_security import PLAINTEXT, ClientSecurity
from harness.errors import HarnessError
from harness.observe.kafka_wire import NodeConnection
from harness.observe.metadata import controller_named

POLL_S = 0.25
FOLLOW_TIMEOUT_S = 30.0
"""How long the copy step waits for the brokers to follow the KRaft controller before it ends anyway, as an operator
would go on: the step's detail then says which brokers were not seen to."""

Ask = Callable[[int], int]
"""Broker id -> the controller id its Metadata answer names now (raises `HarnessError` or `OSError` without one)."""


def await_following(brokers: Mapping[int, str], timeout_s: float, stop: threading.Event,
                    security: ClientSecurity = PLAINTEXT) -> str | None:
    """None once every broker in `brokers` (id -> client address) has named two different controllers, else what
    each broker named when `timeout_s` ran out or `stop` was set."""
    conns = {b: NodeConnection(b, a, timeout_s=1.0, client_id="kafka-chaos-operator", security=security)
             for b, a in sorted(brokers.items())}
    try:
        return follow(lambda b: controller_named(conns[b]), sorted(conns), timeout_s, stop)
    finally:
        for conn in conns.values():
            conn.close()


def follow(ask: Ask, brokers: list[int], timeout_s: float, stop: threading.Event) -> str | None:
    """`await_following` over `ask` (pure but for `ask` and the clock)."""
    named: dict[int, set[int]] = {b: set() for b in brokers}
    errors: dict[int, str] = {}
    deadline = time.monotonic() + timeout_s
    while True:
        for b in brokers:
            if len(named[b]) >= 2:
                continue
            try:
                named[b].add(ask(b))
                errors.pop(b, None)
            except (HarnessError, OSError) as exc:
                errors[b] = f"{type(exc).__name__}: {exc}"
        behind = [b for b in brokers if len(named[b]) < 2]
        if not behind:
            return None
        if time.monotonic() >= deadline or stop.wait(POLL_S):
            return "; ".join(f"broker {b} " + (f"named only controller {sorted(named[b])[0]}" if named[b]
                                               else f"did not answer ({errors.get(b, 'no answer')})")
                             for b in behind)
