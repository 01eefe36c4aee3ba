"""The worker relay (`harness.workload.worker`) with a stand-in worker: a short Python script that speaks the Java
worker's line protocol (settings on stdin, events and control lines on stdout). The Java worker itself runs against
Apache Kafka in tests/integration/workload/test_java_client_on_apache_kafka.py; these tests are about the relay: the
clock, the crash record, the settings channel."""

from __future__ import annotations

import sys
import textwrap
import time

from harness.history.events import ClientCrash, HistoryEvent, Send
from harness.workload.worker import END_OF_SETTINGS, WorkerProcess, mono_to_wall_ms

PRELUDE = textwrap.dedent(f"""
    import json, sys, time
    settings = {{}}
    for line in sys.stdin:
        line = line.rstrip("\\n")
        if line == {END_OF_SETTINGS!r}:
            break
        key, _, value = line.partition("=")
        settings[key] = value.replace("\\\\", "")
    def out(record):
        print(json.dumps(record), flush=True)
    out({{"ctl": "ready", "mono_ns": time.monotonic_ns()}})
""")


def stand_in(body: str) -> list[str]:
    return [sys.executable, "-c", PRELUDE + textwrap.dedent(body)]


class Sink:
    def __init__(self) -> None:
        self.events: list[HistoryEvent] = []

    def __call__(self, event: HistoryEvent) -> None:
        self.events.append(event)


def test_a_monotonic_instant_maps_onto_epoch_milliseconds_by_its_age() -> None:
    assert mono_to_wall_ms(9_500_000_000, now_mono=10.0, now_wall=1000.0) == 999_500.0


def test_a_worker_event_is_typed_and_stamped_when_the_worker_took_it_not_when_it_arrived() -> None:
    sink = Sink()
    worker = WorkerProcess(stand_in("""
        out({"type": "send", "mono_ns": time.monotonic_ns() - 400_000_000, "producer": "p", "value": 7,
             "key": None, "topic": "t", "acks": "all"})
        sys.stdin.readline()
        out({"ctl": "closed", "mono_ns": time.monotonic_ns()})
    """), {}, src="producer:p", sink=sink)
    worker.start(30.0)
    worker.close(30.0)
    (event,) = sink.events
    assert isinstance(event, Send) and event.src == "producer:p" and event.value == 7
    assert event.wall is not None and 300 <= time.time() * 1000 - event.wall < 30_000
    assert worker.failure is None


def test_a_worker_that_dies_on_its_own_is_recorded_as_client_crash_with_its_last_words() -> None:
    sink = Sink()
    worker = WorkerProcess(stand_in("""
        print("java.lang.OutOfMemoryError: Java heap space", file=sys.stderr, flush=True)
        time.sleep(0.2)
        sys.exit(3)
    """), {}, src="consumer:g/0", sink=sink)
    worker.start(30.0)
    assert worker.wait_control("drained", 30.0) is None  # no hang: the wait ends with the process
    (crash,) = [e for e in sink.events if isinstance(e, ClientCrash)]
    assert (crash.client, crash.exit_code) == ("consumer:g/0", 3)
    assert "OutOfMemoryError" in crash.last_words
    assert worker.failure == "exited with 3" and not worker.alive


def test_a_worker_killed_on_purpose_is_no_crash() -> None:
    sink = Sink()
    worker = WorkerProcess(stand_in("time.sleep(60)"), {}, src="consumer:g/1", sink=sink)
    worker.start(30.0)
    worker.kill()
    assert not worker.alive and not sink.events and worker.failure is None


def test_settings_reach_the_worker_on_its_stdin_never_on_its_command_line() -> None:
    sink = Sink()
    seen: list[dict[str, object]] = []
    worker = WorkerProcess(stand_in("""
        out({"ctl": "echo", "settings": settings, "argv": sys.argv})
        sys.stdin.readline()
        out({"ctl": "closed"})
    """), {"client.sasl.jaas.config": "secret = x", "worker.role": "producer"}, src="producer:p", sink=sink,
        on_control=seen.append)
    worker.start(30.0)
    echo = worker.wait_control("echo", 30.0)
    worker.close(30.0)
    assert echo is not None
    assert echo["settings"] == {"client.sasl.jaas.config": "secret = x", "worker.role": "producer"}
    assert "secret" not in " ".join(map(str, echo["argv"]))  # type: ignore[call-overload]
    assert [c["ctl"] for c in seen] == ["ready", "echo", "closed"]


def test_a_running_worker_has_a_leftover_record_and_loses_it_when_reaped() -> None:
    """A harness killed with SIGKILL leaves no worker behind: the next run's clean_leftovers (or the reaper) kills
    what the records name."""
    from harness.workload import worker as worker_module

    worker = WorkerProcess(stand_in("time.sleep(60)"), {}, src="producer:rec", sink=Sink())
    worker.start(30.0)
    records = {r.pid: r.what for r in worker_module._registry().registered()}
    assert records.get(worker.pid) == "worker:producer:rec"
    worker.kill()
    assert worker.pid not in {r.pid for r in worker_module._registry().registered()}


def test_the_settings_a_worker_is_sent_read_back_as_they_were_written() -> None:
    """The pinned librdkafka's worker reads the java.util.Properties text the relay writes (`_escape`): separators,
    backslashes and line breaks in keys and values survive."""
    from harness.workload.worker import _escape, parse_settings

    settings = {"client.sasl.jaas.config": 'a=b c:d #e !f \\g', "worker.topics": "t1,t2", "x\ny": "multi\nline\r"}
    lines = [f"{_escape(k)}={_escape(v)}" for k, v in settings.items()]
    assert parse_settings(lines) == settings
