"""`python -m harness.workload.py_worker`: a librdkafka client out of process, on the confluent-kafka that comes
first on `PYTHONPATH` (a pinned release: `harness.install.librdkafka_client`). It speaks the Java worker's line
protocol (`java/Worker.java`: settings on stdin up to `--end-of-settings--`, then commands; events and `ctl` lines
on stdout), and runs the harness's own librdkafka workloads inside: role `producer` is a `ProducerWorkload`, role
`member` a consumer-group `Member`. So the events, their fields and the client's behaviour are those of the
in-process path; only the library differs. Each event without a `wall` gets `mono_ns` (CLOCK_MONOTONIC, as the
Java worker's), which `harness.workload.worker` places on the history's clock. End of stdin (the harness is gone)
ends the process at once. Transactional producers and pipelines are refused (`harness.experiment.workload_spec`).
"""

from __future__ import annotations

import faulthandler
import json
import logging
import os
import sys
import threading
import time
import traceback
from typing import Any, TextIO

from harness.history.events import HistoryEvent
from harness.workload.common import LIBRDKAFKA_LOGGER
from harness.workload.worker import END_OF_SETTINGS, parse_settings

_DRAIN_REPORT_S = 0.5
_CLOSE_TIMEOUT_S = 10.0
_OUT_LOCK = threading.Lock()


def out(record: dict[str, Any]) -> None:
    line = json.dumps(record, default=str, separators=(",", ":"))
    with _OUT_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def event_line(event: HistoryEvent) -> None:
    record = event.to_json()
    if record.get("wall") is None:
        record.pop("wall", None)
        record["mono_ns"] = time.monotonic_ns()
    out(record)


class Commands:
    """The harness's commands, read on their own thread; end of stdin ends the process."""

    def __init__(self) -> None:
        self.closing = threading.Event()
        self.stopped = threading.Event()
        self.drain_ms: int | None = None
        self.draining: bool | None = None
        self.paused: bool | None = None
        self.changed = threading.Event()

    def read(self, stdin: TextIO) -> None:
        for raw in stdin:
            word = raw.split()
            if not word:
                continue
            if word[0] in ("pause", "resume"):
                self.paused = word[0] == "pause"
            elif word[0] == "draining":
                self.draining = len(word) > 1 and word[1] == "on"
            elif word[0] == "drain" and len(word) > 1:
                self.drain_ms = int(word[1])
                self.stopped.set()
            elif word[0] == "stop":
                self.stopped.set()
            elif word[0] == "close":
                self.stopped.set()
                self.closing.set()
            self.changed.set()
        os._exit(2)  # the harness is gone: nothing may outlive it


def ctl(what: str, **fields: Any) -> None:
    out({"ctl": what, **fields})


def run_producer(settings: dict[str, str], client: dict[str, str], cmd: Commands) -> None:
    from harness.workload.producer import ProducerWorkload

    config = dict(client)
    bootstrap = config.pop("bootstrap.servers")
    config.pop("client.id", None)
    config.pop("acks", None)
    idempotence = config.pop("enable.idempotence", "false") == "true"
    producer = ProducerWorkload(bootstrap, event_line, producer_id=settings["worker.producer"],
                                topic=settings["worker.topic"], rate=float(settings["worker.rate"]),
                                acks=settings["worker.acks"], idempotence=idempotence,
                                keys=int(settings.get("worker.keys", "0")),
                                value_base=int(settings.get("worker.value_base", "0")), extra_config=config)
    producer.start()
    ctl("ready")
    paused = stopped = False
    while not cmd.closing.is_set():
        cmd.changed.wait(0.05)
        cmd.changed.clear()
        if cmd.paused is not None and cmd.paused != paused:
            paused = cmd.paused
            (producer.pause if paused else producer.resume)()
        if cmd.stopped.is_set() and not stopped:
            stopped = True
            producer.stop()
        if cmd.drain_ms is not None:
            ms, cmd.drain_ms = cmd.drain_ms, None
            producer.drain(ms / 1000.0)
            ctl("drained", outstanding=producer.in_flight)
    producer.close()


def run_member(settings: dict[str, str], client: dict[str, str], cmd: Commands) -> None:
    from harness.workload.member import Member

    member = Member(group=settings["worker.group"], slot=int(settings["worker.consumer"].rsplit("/", 1)[1]),
                    topics=settings["worker.topics"].split(","), config={**client, "logger": LIBRDKAFKA_LOGGER},
                    commit=settings["worker.commit"], commit_interval_s=float(settings["worker.commit_interval_s"]),
                    incremental=settings.get("worker.incremental") == "true", sink=event_line)
    member.start(60.0)
    ctl("ready")
    draining, last_report = False, 0.0
    while not cmd.closing.is_set():
        cmd.changed.wait(0.05)
        cmd.changed.clear()
        if cmd.paused is not None and cmd.paused != member.paused:
            (member.pause if cmd.paused else member.resume)()
        if cmd.draining is not None and cmd.draining != draining:
            draining = cmd.draining
            member.set_draining(draining)
        if draining and time.monotonic() - last_report >= _DRAIN_REPORT_S:
            last_report = time.monotonic()
            ctl("drain", known=sorted(member.known_partitions), caught_up=member.caught_up,
                detail=member.last_check_error, owned=sorted(member.assignment))
        if not member.alive:
            raise RuntimeError(f"the member's thread ended: {member.failure}")
    member.end("close")
    member.join(_CLOSE_TIMEOUT_S)


def main() -> int:
    faulthandler.enable()  # a crash in librdkafka prints every thread's Python stack to stderr: the run's clients.log
    lines = []
    for raw in sys.stdin:
        line = raw.rstrip("\n")
        if line == END_OF_SETTINGS:
            break
        lines.append(line)
    settings = parse_settings(lines)
    client = {k[len("client."):]: v for k, v in settings.items() if k.startswith("client.")}
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    LIBRDKAFKA_LOGGER.addHandler(handler)
    LIBRDKAFKA_LOGGER.setLevel(logging.DEBUG if client.get("debug") else logging.INFO)  # `debug` contexts log at 7
    cmd = Commands()
    threading.Thread(target=cmd.read, args=(sys.stdin,), name="commands", daemon=True).start()
    role = settings.get("worker.role")
    try:
        if role == "producer":
            run_producer(settings, client, cmd)
        elif role == "member":
            run_member(settings, client, cmd)
        else:
            raise ValueError(f"worker.role must be producer or member on a pinned librdkafka, not {role!r}")
    except BaseException as exc:  # reported to the harness; the exit code says it too
        ctl("failed", error=f"{type(exc).__name__}: {exc}")
        traceback.print_exc()
        return 1
    ctl("closed")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
