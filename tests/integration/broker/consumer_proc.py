"""A real confluent-kafka group consumer as its own process, for tests that SIGKILL or SIGTERM it.

`python -m tests.integration.broker.consumer_proc BOOTSTRAP GROUP TOPIC [SESSION_MS] [INSTANCE_ID]`
prints one JSON line per event (`ready`, `assign`, `revoke`) and polls until SIGTERM, then closes
cleanly (LeaveGroup for dynamic members).
"""

from __future__ import annotations

import json
import signal
import sys
from typing import Any

from confluent_kafka import Consumer


def emit(**event: Any) -> None:
    print(json.dumps(event), flush=True)


def main(argv: list[str]) -> int:
    bootstrap, group, topic = argv[:3]
    session_ms = argv[3] if len(argv) > 3 else "6000"
    conf = {"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": session_ms,
            "heartbeat.interval.ms": "500", "auto.offset.reset": "earliest", "enable.auto.commit": False}
    if len(argv) > 4:
        conf["group.instance.id"] = argv[4]
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    c = Consumer(conf)

    def on_assign(_c: Any, parts: list[Any]) -> None:
        emit(event="assign", partitions=sorted([p.topic, p.partition] for p in parts))

    def on_revoke(_c: Any, parts: list[Any]) -> None:
        emit(event="revoke", partitions=sorted([p.topic, p.partition] for p in parts))

    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    emit(event="ready")
    while not stop:
        c.poll(0.2)
    c.close()
    emit(event="closed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
