"""Live progress on the terminal (rich): of `kafka-chaos run` (phase, elapsed/total, next fault, events recorded)
and of the verify that follows it or `kafka-chaos verify` (its step: Spark starting, the history read, check i of
n); plain lines when the output is not a terminal (CI logs), without the per-check steps."""

from __future__ import annotations

import time
from collections.abc import Callable

from rich.console import Console


class RichProgress:
    """`on_phase` hears each phase's name as it begins (the CLI lowers the verifier warm-up's priority at chaos)."""

    def __init__(self, console: Console | None = None, on_phase: Callable[[str], None] | None = None) -> None:
        self.console = console or Console(stderr=True, log_path=False)  # no "cli_progress.py:23" at the right edge
        self._on_phase = on_phase
        self._phase = "-"
        self._t0 = time.monotonic()
        self._last_line = 0.0
        self._status = self.console.status("starting") if self.console.is_terminal else None
        if self._status is not None:
            self._status.start()

    def phase(self, name: str) -> None:
        self._phase = name
        self.console.log(f"[bold]phase[/bold] {name}")
        if self._on_phase is not None:
            self._on_phase(name)

    def tick(self, *, elapsed: float, total: float, next_fault: str | None, events: int) -> None:
        text = (f"{self._phase}: {elapsed:5.1f}s / {total:.0f}s · next: {next_fault or 'none'} · "
                f"{events} events")
        if self._status is not None:
            self._status.update(text)
        elif time.monotonic() - self._last_line >= 10.0:
            self._last_line = time.monotonic()
            self.console.log(text)

    def note(self, text: str) -> None:
        self.console.log(text)

    def close(self) -> None:
        if self._status is not None:
            self._status.stop()


class VerifyProgress:
    """The verify's current step on a status line (stderr); each step but the per-check ones as a plain line when
    stderr is not a terminal. A context manager: the status line goes when the verify ends."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True, log_path=False)
        self._status = self.console.status("verifying") if self.console.is_terminal else None

    def __enter__(self) -> VerifyProgress:
        if self._status is not None:
            self._status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.stop()

    def __call__(self, step: str) -> None:
        if self._status is not None:
            self._status.update(f"verifying: {step}")
        elif not step.startswith("check "):
            self.console.log(f"verifying: {step}")

