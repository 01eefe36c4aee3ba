"""A client out of process: one worker process (the Java client: `java/`, `kafkachaos.Worker`; a pinned librdkafka:
`py_worker`, which speaks the same protocol) whose stdout lines are the history's own events, relayed to the sink as
typed events.

Owns the process's life and the relay:
- every line with a `type` is an event of `harness.history.events`; its `mono_ns` (the worker's CLOCK_MONOTONIC:
  `System.nanoTime()` on Linux, the clock of Python's `time.monotonic()` on the same host) is placed on the
  history's clock: `wall` = now's epoch ms minus how long ago, on the monotonic clock, the worker took it;
- a line with `ctl` is the worker talking to the harness (`ready`, `drained`, `drain`, `closed`, `failed`): kept as
  the last of its kind, and handed to `on_control`;
- stderr lines go to the clients' logger (the run's `clients.log`), and the last 20 are kept;
- a worker that exits without `closed` and without being killed on purpose is recorded as `client.crash` with its
  exit code and its last stderr lines, never a hang: `wait_control` returns as soon as the process is gone.
Each worker gets a leftover record (`harness.cluster.leftovers`), and it halts by itself when its stdin closes, so a
harness that dies leaves no worker behind.
"""

from __future__ import annotations

import collections
import contextlib
import json
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from harness.cluster.leftovers import LeftoverRegistry
from harness.history.events import ClientCrash, parse_event
from harness.history.jsonl import EventSink
from harness.workload.common import LIBRDKAFKA_LOGGER, WorkloadError

CLIENT_LOGGER = LIBRDKAFKA_LOGGER.getChild("worker")
"""The workers' stderr (the Java client's WARN lines): a child of the clients' logger, so into `clients.log`."""
_LAST_WORDS = 20
END_OF_SETTINGS = "--end-of-settings--"
"""Ends the settings (java.util.Properties text) the worker reads from its stdin before its commands."""
_REGISTRY: LeftoverRegistry | None = None
_REGISTRY_LOCK = threading.Lock()


def _registry() -> LeftoverRegistry:
    global _REGISTRY
    with _REGISTRY_LOCK:
        if _REGISTRY is None:
            _REGISTRY = LeftoverRegistry()
        return _REGISTRY


def mono_to_wall_ms(mono_ns: int, *, now_mono: float | None = None, now_wall: float | None = None) -> float:
    """Epoch milliseconds of a CLOCK_MONOTONIC instant taken on this host (to the microsecond)."""
    mono = time.monotonic() if now_mono is None else now_mono
    wall = time.time() if now_wall is None else now_wall
    return round(wall * 1000.0 - (mono - mono_ns / 1e9) * 1000.0, 3)


class WorkerProcess:
    """One worker: `start()` spawns it and waits for its `ready` line; `command()` writes a line to its stdin;
    `kill()` is SIGKILL (on purpose: no `client.crash`); `close(timeout_s)` asks it to close and kills it when it
    does not within the timeout. `failure` names why it is gone when it went on its own."""

    def __init__(self, argv: list[str], properties: Mapping[str, str], *, src: str, sink: EventSink,
                 on_control: Callable[[dict[str, Any]], None] | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.src = src
        self._argv = argv
        self._env = None if env is None else dict(env)
        self._properties = dict(properties)
        self._sink = sink
        self._on_control = on_control
        self._proc: subprocess.Popen[bytes] | None = None
        self._threads: list[threading.Thread] = []
        self._cond = threading.Condition()
        self._control: dict[str, dict[str, Any]] = {}
        self._last_words: collections.deque[str] = collections.deque(maxlen=_LAST_WORDS)
        self._killed = False
        self._gone = False
        self.failure: str | None = None
        self.events = 0

    @property
    def alive(self) -> bool:
        return self._proc is not None and not self._gone

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def start(self, timeout_s: float = 60.0) -> None:
        self._proc = subprocess.Popen(self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, start_new_session=True, env=self._env)
        _registry().register(self._proc.pid, f"worker:{self.src}")
        settings = "".join(f"{_escape(k)}={_escape(v)}\n" for k, v in sorted(self._properties.items()))
        self.command(settings + END_OF_SETTINGS)
        for name, target in (("out", self._relay), ("err", self._stderr)):
            thread = threading.Thread(target=target, name=f"worker-{self.src}-{name}", daemon=True)
            thread.start()
            self._threads.append(thread)
        ready = self.wait_control("ready", timeout_s)
        if ready is None:
            self.kill()
            failure, self.failure = self.failure, None  # reported here, not again at close
            why = f"it {failure}" if failure else f"no ready line within {timeout_s:g}s"
            raise WorkloadError(f"{self.src}: the worker did not start: {why}; its last words: "
                                f"{self.last_words() or 'none'}")

    def last_words(self) -> str:
        return " | ".join(self._last_words)

    def command(self, line: str) -> None:
        """Send one command line; a worker already gone ignores it."""
        proc = self._proc
        if proc is None or proc.stdin is None or self._gone:
            return
        try:
            proc.stdin.write((line + "\n").encode())
            proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            pass

    def wait_control(self, what: str, timeout_s: float, *, after: float = 0.0) -> dict[str, Any] | None:
        """The worker's last `ctl: what` line received at or after monotonic time `after`, waiting up to
        `timeout_s`; None when the time passed or the worker is gone without it."""
        def seen() -> dict[str, Any] | None:
            line = self._control.get(what)
            return line if line is not None and line["_received"] >= after else None

        with self._cond:
            self._cond.wait_for(lambda: seen() is not None or self._gone, timeout_s)
            return seen()

    def kill(self) -> None:
        """SIGKILL, as a crash of the application would: no close, no LeaveGroup."""
        self._killed = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
        self._reap(10.0)

    def close(self, timeout_s: float) -> None:
        """Ask the worker to close its client, wait up to `timeout_s`, then kill it."""
        if self._proc is None:
            return
        self.command("close")
        with self._cond:
            self._cond.wait_for(lambda: self._gone, timeout_s)
        if not self._gone:
            self.failure = self.failure or f"did not close within {timeout_s:g}s"
            self.kill()
        self._reap(10.0)

    def _reap(self, timeout_s: float) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout_s)
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        _registry().unregister(proc.pid)

    # -- the relay threads -----------------------------------------------------------------------------------
    def _relay(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        for raw in proc.stdout:
            try:
                record = json.loads(raw)
            except ValueError:
                self._last_words.append(raw.decode("utf-8", "replace").rstrip())
                continue
            if not isinstance(record, dict):
                continue
            if "ctl" in record:
                self._control_line(record)
            else:
                self._event(record)
        code = proc.wait()
        with self._cond:
            closed = "closed" in self._control
            if not closed and not self._killed:
                failed = self._control.get("failed")
                self.failure = (f"exited with {code}" + (f": {failed.get('error')}" if failed else ""))
            self._gone = True
            self._cond.notify_all()
        if not closed and not self._killed:
            self._sink(ClientCrash(src=self.src, client=self.src, exit_code=code, last_words=self.last_words()))

    def _event(self, record: dict[str, Any]) -> None:
        mono_ns = record.pop("mono_ns", None)
        record["src"] = self.src
        if isinstance(mono_ns, int):
            record["wall"] = mono_to_wall_ms(mono_ns)
        event = parse_event(record)
        if event is None:
            self._last_words.append(f"not an event: {json.dumps(record)[:200]}")
            return
        self.events += 1
        self._sink(event)

    def _control_line(self, record: dict[str, Any]) -> None:
        record["_received"] = time.monotonic()
        with self._cond:
            self._control[str(record["ctl"])] = record
            self._cond.notify_all()
        if self._on_control is not None:
            self._on_control(record)

    def _stderr(self) -> None:
        proc = self._proc
        assert proc is not None and proc.stderr is not None
        for raw in proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip()
            if line:
                self._last_words.append(line)
                CLIENT_LOGGER.warning("%s: %s", self.src, line)


def _escape(text: str) -> str:
    """A java.util.Properties key or value: backslashes, separators and line breaks escaped."""
    out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    for ch in "=: #!":
        out = out.replace(ch, "\\" + ch)
    return out


def _unescape(text: str) -> str:
    """A java.util.Properties key or value as `_escape` wrote it."""
    chars, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            i += 1
            ch = {"n": "\n", "r": "\r", "t": "\t"}.get(text[i], text[i])
        chars.append(ch)
        i += 1
    return "".join(chars)


def parse_settings(lines: list[str]) -> dict[str, str]:
    """`key=value` lines, separators escaped in keys and values (the only form the harness writes)."""
    settings: dict[str, str] = {}
    for line in lines:
        i = 0
        while i < len(line) and line[i] != "=":
            i += 2 if line[i] == "\\" else 1
        settings[_unescape(line[:i])] = _unescape(line[i + 1:])
    return settings
