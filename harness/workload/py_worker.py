"""`python -m harness.workload.py_worker`: a librdkafka client out of process, on the confluent-kafka that comes
first on `PYTHONPATH` (a pinned release: `harness.install.librdkafka_client`). It speaks the Java worker's line
protocol (`java/Worker.java`: settings on stdin up to `--end-of-settings--`, then commands; events and `ctl` lines
on stdout), and runs the harness's own librdkafka workloads inside: role `producer` is a `ProducerWorkload`,
`txn_producer` a `TransactionalProducerWorkload`, `pipeline` a `PipelineWorkload` (one worker per client session:
the harness carries the transaction numbering and an abandoned transaction over to the next worker, and a zombie
restart is `hold` here, then `zombie <first value>` once the next worker's session has fenced this one), role
`member` a consumer-group `Member`. So the events, their fields and the client's behaviour are those of the
in-process path; only the library differs. Each event without a `wall` gets `mono_ns` (CLOCK_MONOTONIC, as the
Java worker's), which `harness.workload.worker` places on the history's clock. End of stdin (the harness is gone)
ends the process at once.
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

import confluent_kafka

from harness.history.events import HistoryEvent
from harness.workload.common import LIBRDKAFKA_LOGGER
from harness.workload.member import Member
from harness.workload.pipeline import PipelineWorkload
from harness.workload.producer import ProducerWorkload
from harness.workload.txn_producer import TransactionalProducerWorkload, give_up
from harness.workload.worker import END_OF_SETTINGS, parse_settings

_DRAIN_REPORT_S = 0.5
_CLOSE_TIMEOUT_S = 10.0
_HOLD_TIMEOUT_S = 30.0
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
        self.hold = threading.Event()
        self.zombie_base: int | None = None
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
            elif word[0] == "hold":
                self.hold.set()
            elif word[0] == "zombie" and len(word) > 1:
                self.zombie_base = int(word[1])
            elif word[0] == "close":
                self.stopped.set()
                self.closing.set()
            self.changed.set()
        os._exit(2)  # the harness is gone: nothing may outlive it


def ctl(what: str, **fields: Any) -> None:
    out({"ctl": what, **fields})


class TxnSession(TransactionalProducerWorkload):
    """One worker's session of a transactional producer: the in-process workload, which also says `initialized` after
    each init_transactions (a zombie restart waits for it) and `committing` before it asks for a commit (from then on
    a kill leaves the outcome unknown), and which takes up where the killed worker left off (`carry_on`)."""

    _carried: tuple[int, bool] | None = None

    def carry_on(self, settings: dict[str, str]) -> None:
        """The session numbers its transactions on from `worker.txn_base`; a transaction the last worker left open
        (`worker.abandoned_txn`) ends when this session's init_transactions succeeds: aborted, or unknown when its
        commit was under way (its EndTxn(COMMIT) may have reached the coordinator, which then completes it)."""
        self._next_txn = int(settings.get("worker.txn_base", "0"))
        abandoned = settings.get("worker.abandoned_txn")
        if abandoned:
            left = (int(abandoned), settings.get("worker.abandoned_abort") == "true")
            if settings.get("worker.abandoned_committing") == "true":
                self._carried = left
            else:
                self._abandoned = left

    def _init(self, producer: confluent_kafka.Producer) -> bool:
        if not super()._init(producer):
            return False
        if self._carried is not None:
            txn, abort = self._carried
            self._carried = None
            self._record_end(txn, abort, "unknown", "_ABANDONED", "its commit was under way when an abrupt restart "
                             "ended the client; the new session's init_transactions completed or aborted it")
        ctl("initialized")
        return True

    def _end(self, producer: confluent_kafka.Producer) -> str:
        if self._open is not None and not self._open[1]:
            ctl("committing", txn=self._open[0])
        return super()._end(producer)

    def zombie(self, old: confluent_kafka.Producer, txn: int, first_value: int) -> None:
        """The held client, fenced by the next worker's session, writes from `first_value` (the values the harness
        kept for it) into `txn` and commits (`txn.zombie`)."""
        self._next_n = first_value - self.value_base
        try:
            self.zombie_writes(old, txn)
        finally:
            give_up(old)


class PipelineSession(TxnSession, PipelineWorkload):
    """One worker's session of a read-process-write pipeline (`PipelineWorkload`, as `TxnSession` says)."""


def producer_for(settings: dict[str, str], client: dict[str, str]) -> ProducerWorkload:
    """The role's workload: `producer` (plain or idempotent), `txn_producer` or `pipeline`."""
    role = settings["worker.role"]
    config = dict(client)
    bootstrap = config.pop("bootstrap.servers")
    for own in ("client.id", "acks", "transactional.id", "transaction.timeout.ms"):  # the workload sets these
        config.pop(own, None)
    idempotence = config.pop("enable.idempotence", "false") == "true"
    value_base = int(settings.get("worker.value_base", "0"))
    if role == "producer":
        return ProducerWorkload(bootstrap, event_line, producer_id=settings["worker.producer"],
                                topic=settings["worker.topic"], rate=float(settings["worker.rate"]),
                                acks=settings["worker.acks"], idempotence=idempotence,
                                keys=int(settings.get("worker.keys", "0")), value_base=value_base,
                                extra_config=config)
    txn_id, records = settings["worker.transactional_id"], int(settings["worker.records"])
    timeout_s = int(settings["worker.timeout_ms"]) / 1000.0
    session: TxnSession
    if role == "pipeline":
        session = PipelineSession(bootstrap, event_line, pipeline_id=settings["worker.producer"],
                                  group=settings["worker.group"], input_topic=settings["worker.input"],
                                  output_topic=settings["worker.topic"], transactional_id=txn_id, records=records,
                                  timeout_s=timeout_s, value_base=value_base, extra_config=config)
    elif role == "txn_producer":
        session = TxnSession(bootstrap, event_line, producer_id=settings["worker.producer"],
                             topic=settings["worker.topic"], rate=float(settings["worker.rate"]),
                             abort_rate=float(settings.get("worker.abort_rate", "0")),
                             seed=int(settings.get("worker.seed", "0")), keys=int(settings.get("worker.keys", "0")),
                             transactional_id=txn_id, records=records, timeout_s=timeout_s, value_base=value_base,
                             extra_config=config)
    else:
        raise ValueError(f"worker.role must be producer, txn_producer, pipeline or member, not {role!r}")
    session.carry_on(settings)
    return session


def run_producer(settings: dict[str, str], client: dict[str, str], cmd: Commands) -> None:
    producer = producer_for(settings, client)
    producer.start()
    ctl("ready")
    paused = stopped = False
    held: tuple[confluent_kafka.Producer, int] | None = None
    while not cmd.closing.is_set():
        cmd.changed.wait(0.05)
        cmd.changed.clear()
        if cmd.paused is not None and cmd.paused != paused:
            paused = cmd.paused
            (producer.pause if paused else producer.resume)()
        if cmd.hold.is_set() and held is None and isinstance(producer, TxnSession):
            cmd.hold.clear()
            held = producer.hold_open(_HOLD_TIMEOUT_S)  # a zombie restart: the harness starts the next worker
            ctl("held", txn=held[1])
        if held is not None and cmd.zombie_base is not None and isinstance(producer, TxnSession):
            base, cmd.zombie_base = cmd.zombie_base, None
            producer.zombie(held[0], held[1], base)
            ctl("zombied")
        if cmd.stopped.is_set() and not stopped:
            stopped = True
            producer.stop()
        if cmd.drain_ms is not None:
            ms, cmd.drain_ms = cmd.drain_ms, None
            producer.drain(ms / 1000.0)
            ctl("drained", outstanding=producer.in_flight)
    producer.close()


def run_member(settings: dict[str, str], client: dict[str, str], cmd: Commands) -> None:
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
        if role == "member":
            run_member(settings, client, cmd)
        else:
            run_producer(settings, client, cmd)
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
