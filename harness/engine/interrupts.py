"""How a run is stopped by a signal: the process's one signal state (`INTERRUPTS`).

Owns the handling of SIGTERM, SIGINT and SIGHUP (`INTERRUPT_SIGNALS`): the first one raises
KeyboardInterrupt in the main thread so the run heals, tears down and records `interrupted`; later
ones, and any that arrive while teardown is shielded, are only noted; `deferred` holds a signal
until a block ends (a fault is never half injected), and `call` lets a signal stop a call made
inside such a block without losing what the call returns (the cluster `backend.up()` brought up).
`kafka-chaos run` installs it; every `Run` shields its teardown with it. The list of signals received
feeds the history's `signal` events.
"""

from __future__ import annotations

import inspect
import os
import signal
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from types import FrameType
from typing import Any, ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")

INTERRUPT_SIGNALS: tuple[str, ...] = ("SIGTERM", "SIGINT", "SIGHUP")


class Interrupts:
    """SIGTERM, SIGINT and SIGHUP stop a run: the first one (outside teardown) raises
    KeyboardInterrupt in the main thread, so the run heals, tears down and records `interrupted`;
    any later one, and any one that arrives while teardown is shielded, is only noted (teardown is
    never cut short). `received` lists every signal seen, in order, for the history."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self._raised = False
        self._shield = 0
        self._deferring = 0
        self._calling: FrameType | None = None

    def install(self, names: Sequence[str] = INTERRUPT_SIGNALS) -> dict[int, Any]:
        """Forget earlier signals and handle these (main thread only; names the platform lacks are
        skipped). Returns the previous handlers, for `restore`."""
        self.reset()
        previous: dict[int, Any] = {}
        for name in names:
            sig = getattr(signal, name, None)
            if sig is not None:
                previous[sig] = signal.signal(sig, self.handle)
        return previous

    @staticmethod
    def restore(previous: dict[int, Any]) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)

    def handle(self, signum: int, frame: FrameType | None) -> None:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        self.received.append(name)
        if self._raised or (self._shield and not self._inside_call(frame)):
            if not self._raised and self._shield == self._deferring:  # raised when the deferred block ends
                self._say(f"{name} received: healing faults and stopping the cluster once this step is done")
            else:
                self._say(f"{name} received: finishing teardown first (the run is recorded as interrupted)")
            return
        self._raised = True
        self._say(f"{name} received: healing faults and stopping the cluster")
        raise KeyboardInterrupt(name)

    @staticmethod
    def _say(text: str) -> None:
        """os.write, not print: a signal handler must not re-enter a buffered stream (and the
        terminal may be gone after SIGHUP)."""
        with suppress(OSError):
            os.write(2, f"\n{text}\n".encode())

    @property
    def interrupted(self) -> bool:
        return bool(self.received)

    @contextmanager
    def shielded(self) -> Iterator[None]:
        """Signals inside this block are only noted, never raised."""
        self._shield += 1
        try:
            yield
        finally:
            self._shield -= 1

    @contextmanager
    def deferred(self) -> Iterator[None]:
        """A signal inside this block is held until the block ends (a fault is never half injected
        or half healed, so teardown knows what to heal), then raised as the first signal would be."""
        before = len(self.received)
        self._deferring += 1
        try:
            with self.shielded():
                yield
        finally:
            self._deferring -= 1
        if len(self.received) > before and not self._raised and not self._shield:
            self._raised = True
            raise KeyboardInterrupt(self.received[before])

    def call(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`fn(*args, **kwargs)`, which the first signal stops at once (KeyboardInterrupt inside `fn`)
        even within a `deferred` block; a signal that lands after `fn` returned, before the caller
        holds its result, is held like any other in that block and raised when the block ends.

        The runner brings the cluster up this way: a signal inside `backend.up()` stops the bring-up
        (the process backend tears down what it started, `start_or_teardown`), and one that lands as
        `up()` returns can no longer lose the running cluster on its way to the run's teardown. `fn`
        is called from this frame (not through a lambda or wrapper, whose frame would sit between).
        """
        outer, self._calling = self._calling, inspect.currentframe()
        try:
            return fn(*args, **kwargs)
        finally:
            self._calling = outer

    def _inside_call(self, frame: FrameType | None) -> bool:
        """Whether `frame` (where the main thread was when the signal was handled) runs inside the
        function `call` is calling, i.e. below `call`'s own frame, not in it or above it."""
        target = self._calling
        if target is None or frame is None or frame is target:
            return False
        f = frame.f_back
        while f is not None:
            if f is target:
                return True
            f = f.f_back
        return False

    def reset(self) -> None:
        self.received.clear()
        self._raised = False


INTERRUPTS = Interrupts()
"""The process's one signal state: `kafka-chaos run` installs it, every Run shields its teardown with it."""
