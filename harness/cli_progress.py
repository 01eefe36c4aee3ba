"""Live progress of `kafka-chaos run` on the terminal (rich): phase, elapsed/total, next fault,
events recorded; plain lines when the output is not a terminal (CI logs)."""

from __future__ import annotations

import time

from rich.console import Console


class RichProgress:
    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True, log_path=False)  # no "cli_progress.py:23" at the right edge
        self._phase = "-"
        self._t0 = time.monotonic()
        self._last_line = 0.0
        self._status = self.console.status("starting") if self.console.is_terminal else None
        if self._status is not None:
            self._status.start()

    def phase(self, name: str) -> None:
        self._phase = name
        self.console.log(f"[bold]phase[/bold] {name}")

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
