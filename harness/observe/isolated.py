"""Observers in a child process, so that a crash inside a native client library cannot take the
harness down with it.

librdkafka can abort the whole process from its admin code path (an assertion in
`rd_kafka_enq_once_del_source_return` after DescribeGroups timeouts, librdkafka issue #4605), and
the harness must keep recording through broker faults. `IsolatedAdminObserver` runs an
`AdminObserver` in `python -m harness.observe.isolated`, reads its events as JSON lines, forwards
them to the sink, and when the child dies records `observer.error` and starts a new one (which
re-emits the current state).

Each child gets a leftover record (`harness.cluster.leftovers`, the same per-user directory the
process backend uses), so a harness that dies without stopping the observer (SIGKILL) leaves
nothing the next run's `clean_leftovers()` does not kill.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence

from harness.cluster.client_security import PLAINTEXT, ClientSecurity
from harness.cluster.leftovers import LeftoverRegistry
from harness.errors import TeardownError
from harness.history.events import HistoryEvent, ObserverError, parse_event
from harness.history.jsonl import EventSink, record_of
from harness.observe.base import StartedByWith

RESTART_BACKOFF_S = 1.0
CONFIG_ENV = "KAFKA_CHAOS_OBSERVER_CLIENT_CONFIG"
"""The child's extra librdkafka settings (a secured cluster's, JSON): passwords stay off the command line."""


class IsolatedAdminObserver(StartedByWith):
    """An `AdminObserver` in a child process; implements `harness.observe.base.Observer`."""

    def __init__(self, bootstrap_servers: str, sink: EventSink, *, interval: float = 0.5, name: str = "admin",
                 groups: Sequence[str] = (), python: str = sys.executable,
                 leftovers: LeftoverRegistry | None = None, controller_events: bool = True,
                 security: ClientSecurity = PLAINTEXT) -> None:
        self.name = name
        self._env = {**os.environ, CONFIG_ENV: json.dumps(security.librdkafka())}
        """The secured cluster's client settings reach the child in its environment, not on its command line."""
        self._leftovers = leftovers
        self._own_leftovers = leftovers is None
        self._sink = sink
        self._argv = [python, "-m", "harness.observe.isolated", "--bootstrap", bootstrap_servers,
                      "--interval", str(interval), "--name", name, *[a for g in groups for a in ("--group", g)],
                      *([] if controller_events else ["--no-controller-events"])]
        self._proc: subprocess.Popen[bytes] | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()
        self.restarts = 0

    def start(self) -> None:
        self._stopping.clear()
        self._spawn()
        self._thread = threading.Thread(target=self._pump, name=f"observer-{self.name}", daemon=True)
        self._thread.start()

    def _spawn(self) -> None:
        if self._leftovers is None:
            self._leftovers = LeftoverRegistry()
        self._proc = subprocess.Popen(self._argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      stdin=subprocess.DEVNULL, start_new_session=True, env=self._env)
        self._leftovers.register(self._proc.pid, f"observer:{self.name}")

    def _forget(self, proc: subprocess.Popen[bytes]) -> None:
        """Drop the leftover record of a child that was reaped."""
        if self._leftovers is not None:
            self._leftovers.unregister(proc.pid)

    def _pump(self) -> None:
        while not self._stopping.is_set():
            proc = self._proc
            assert proc is not None and proc.stdout is not None
            for raw in proc.stdout:
                try:
                    event = json.loads(raw)
                except ValueError:
                    continue
                typed = parse_event(event) if isinstance(event, dict) else None
                if typed is not None:
                    self._sink(typed)
                else:  # the child runs this same code, so this is a bug: seen, not lost
                    self._sink(ObserverError(src=self.name, observer=self.name,
                                             error=f"unreadable event from the observer process: {raw[:200]!r}"))
            code = proc.wait()
            self._forget(proc)
            if self._stopping.is_set():
                return
            how = f"signal {-code}" if code < 0 else f"exit code {code}"
            self._sink(ObserverError(src=self.name, observer=self.name,
                                     error=f"observer process died ({how}); restarting it"))
            time.sleep(RESTART_BACKOFF_S)
            if self._stopping.is_set():
                return
            self.restarts += 1
            self._spawn()

    def stop(self) -> None:
        self._stopping.set()
        failures: list[tuple[str, BaseException]] = []
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
            except ProcessLookupError:
                pass
            except OSError as exc:
                failures.append((f"stop observer process {proc.pid}", exc))
        if self._thread is not None:
            self._thread.join(timeout=10)
            if self._thread.is_alive():
                failures.append(("join observer thread", TimeoutError("still running after 10 s")))
            self._thread = None
        if proc is not None and proc.stdout is not None:
            proc.stdout.close()
        if proc is not None and proc.poll() is not None:
            self._forget(proc)
        if self._own_leftovers and self._leftovers is not None:
            self._leftovers.close()  # kills a child a racing restart may have left; drops the records
            self._leftovers = None
        if failures:
            raise TeardownError(failures)


def main(argv: list[str] | None = None) -> int:
    """Child side: run an AdminObserver and print each event as one JSON line until SIGTERM."""
    from harness.observe.admin import AdminObserver

    parser = argparse.ArgumentParser(prog="python -m harness.observe.isolated")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--interval", type=float, default=0.5)
    parser.add_argument("--name", default="admin")
    parser.add_argument("--group", action="append", default=[])
    parser.add_argument("--no-controller-events", action="store_true",
                        help="KRaft: the Admin API names a random broker as controller; do not record it")
    args = parser.parse_args(argv)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    lock = threading.Lock()

    def emit(event: HistoryEvent) -> None:
        line = json.dumps(record_of(event), default=str, separators=(",", ":"))
        with lock:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()

    observer = AdminObserver(args.bootstrap, emit, interval=args.interval, name=args.name, groups=args.group,
                             controller_events=not args.no_controller_events,
                             extra_config=json.loads(os.environ.get(CONFIG_ENV) or "{}"))
    observer.start()
    try:
        done.wait()
    finally:
        observer.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
