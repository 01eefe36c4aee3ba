"""Signals stop a run the same way (issue 22): SIGTERM, SIGINT and SIGHUP raise one
KeyboardInterrupt, the run heals and tears down, a later signal never cuts teardown short, and
the history records each signal; a signal during the cluster's bring-up stops it and never loses the
cluster. Fakes only; the signals are sent to this test process."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.cluster.base import ClusterSpec
from harness.cluster.lifecycle import start_or_teardown
from harness.engine import runner
from harness.engine.bundle import RunBundle
from harness.engine.interrupts import INTERRUPT_SIGNALS, Interrupts
from harness.engine.runner import QuietProgress, Run
from harness.experiment import load_experiment_text
from harness.history.jsonl import read_history
from tests.unit.engine.fakes import FakeBackend, FakeCluster, fake_parts
from tests.unit.engine.test_runner import EXP


@pytest.fixture
def interrupts() -> Iterator[Interrupts]:
    """A fresh Interrupts installed for the three signals; the previous handlers come back after."""
    saved = {name: signal.getsignal(getattr(signal, name)) for name in INTERRUPT_SIGNALS}
    fresh = Interrupts()
    fresh.install()
    try:
        yield fresh
    finally:
        for name, handler in saved.items():
            signal.signal(getattr(signal, name), handler)


def test_install_handles_sigterm_sigint_and_sighup(interrupts: Interrupts) -> None:
    for name in ("SIGTERM", "SIGINT", "SIGHUP"):
        assert signal.getsignal(getattr(signal, name)) == interrupts.handle, name


@pytest.mark.parametrize("name", INTERRUPT_SIGNALS)
def test_the_first_signal_raises_and_a_second_is_only_noted(interrupts: Interrupts, name: str) -> None:
    with pytest.raises(KeyboardInterrupt, match=name):
        os.kill(os.getpid(), getattr(signal, name))
    os.kill(os.getpid(), signal.SIGTERM)  # must not raise
    assert interrupts.received == [name, "SIGTERM"] and interrupts.interrupted


def test_a_signal_inside_the_shield_is_only_noted(interrupts: Interrupts) -> None:
    with interrupts.shielded():
        os.kill(os.getpid(), signal.SIGHUP)
    assert interrupts.received == ["SIGHUP"]
    with pytest.raises(KeyboardInterrupt):  # outside the shield the first one still raises
        os.kill(os.getpid(), signal.SIGTERM)


class _SignalMidChaos(QuietProgress):
    """Sends `signum` to this process once the chaos phase is `at` seconds in."""

    def __init__(self, signum: int, at: float) -> None:
        self.signum, self.at, self.sent = signum, at, False

    def tick(self, *, elapsed: float, total: float, next_fault: str | None, events: int) -> None:
        if elapsed >= self.at and not self.sent:
            self.sent = True
            os.kill(os.getpid(), self.signum)


def _run(tmp_path: Path, interrupts: Interrupts, progress: QuietProgress) -> tuple[runner.RunResult, list[str]]:
    runner.TICK_S = 0.02
    log: list[str] = []
    exp = load_experiment_text(EXP.replace("duration: 600ms", "duration: 30s"), "engine.yaml")
    backend = FakeBackend()
    bundle = RunBundle.create(tmp_path, exp, backend="fake", backend_reason="test")
    result = Run(exp, backend, bundle, progress=progress, parts=fake_parts(log), interrupts=interrupts).execute()
    assert backend.cluster is not None
    return result, backend.cluster.calls


def test_sigterm_mid_chaos_heals_tears_down_and_records_interrupted_while_a_second_signal_is_noted(
    tmp_path: Path, interrupts: Interrupts, monkeypatch: pytest.MonkeyPatch,
) -> None:
    down: Callable[[FakeCluster], None] = FakeCluster.down

    def down_after_another_signal(self: FakeCluster) -> None:
        os.kill(os.getpid(), signal.SIGHUP)  # a second signal in teardown: noted, teardown goes on
        down(self)

    monkeypatch.setattr(FakeCluster, "down", down_after_another_signal)
    result, calls = _run(tmp_path, interrupts, _SignalMidChaos(signal.SIGTERM, at=0.4))
    assert result.status == "interrupted" and result.error == "interrupted by SIGTERM"
    assert calls[-1] == "down"
    events: list[dict[str, Any]] = read_history(result.run_dir / "history.jsonl").events
    assert [e["signal"] for e in events if e["type"] == "signal"] == ["SIGTERM", "SIGHUP"]
    assert all(e["src"] == "engine" for e in events if e["type"] == "signal")
    phases = [e["name"] for e in events if e["type"] == "phase"]
    assert phases == ["setup", "steady", "chaos", "teardown"]  # no heal/drain phase: not a complete run
    starts = {e["fault_id"] for e in events if e["type"] == "fault.start"}
    ends = {e["fault_id"] for e in events if e["type"] == "fault.end"}
    assert starts and starts == ends  # every injected fault was healed in teardown
    assert events[-1]["type"] == "run.end" and events[-1]["status"] == "interrupted"
    assert json.loads((result.run_dir / "run.json").read_text())["status"] == "interrupted"


class _BareInterruptMidChaos(QuietProgress):
    """Raises a KeyboardInterrupt without a message (Python's default SIGINT handler) in the chaos phase."""

    def tick(self, *, elapsed: float, total: float, next_fault: str | None, events: int) -> None:
        raise KeyboardInterrupt


def test_a_bare_keyboard_interrupt_is_recorded_as_sigint_not_as_an_empty_signal_name(tmp_path: Path) -> None:
    result, calls = _run(tmp_path, Interrupts(), _BareInterruptMidChaos())  # no handler installed: Python's own
    assert result.status == "interrupted" and result.error == "interrupted by SIGINT"
    assert calls[-1] == "down"


def test_a_signal_during_teardown_of_a_finished_run_marks_it_interrupted(
    tmp_path: Path, interrupts: Interrupts, monkeypatch: pytest.MonkeyPatch,
) -> None:
    down: Callable[[FakeCluster], None] = FakeCluster.down

    def down_after_a_signal(self: FakeCluster) -> None:
        os.kill(os.getpid(), signal.SIGINT)
        down(self)

    monkeypatch.setattr(FakeCluster, "down", down_after_a_signal)
    runner.TICK_S = 0.02
    exp = load_experiment_text(EXP, "engine.yaml")
    backend = FakeBackend()
    bundle = RunBundle.create(tmp_path, exp, backend="fake", backend_reason="test")
    result = Run(exp, backend, bundle, parts=fake_parts([]), interrupts=interrupts).execute()
    assert result.status == "interrupted" and backend.cluster is not None and backend.cluster.calls[-1] == "down"
    events = read_history(result.run_dir / "history.jsonl").events
    assert [e["signal"] for e in events if e["type"] == "signal"] == ["SIGINT"]


def test_a_signal_while_a_fault_is_injected_waits_for_the_injection_so_teardown_ends_it(
    tmp_path: Path, interrupts: Interrupts, monkeypatch: pytest.MonkeyPatch,
) -> None:
    kill: Callable[[FakeCluster, Any], None] = FakeCluster.kill

    def kill_then_signal(self: FakeCluster, node: Any) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # arrives mid-injection: held until the fault is recorded
        kill(self, node)

    monkeypatch.setattr(FakeCluster, "kill", kill_then_signal)
    result, calls = _run(tmp_path, interrupts, QuietProgress())
    assert result.status == "interrupted" and result.error == "interrupted by SIGTERM"
    events = read_history(result.run_dir / "history.jsonl").events
    assert [e["fault_id"] for e in events if e["type"] == "fault.start"] == [0]
    assert [(e["fault_id"], e.get("left_down")) for e in events if e["type"] == "fault.end"] == [(0, True)]
    # the cluster goes down next: the killed broker is not started only to be stopped again
    assert calls[0] == "kill broker:1" and "start broker:1" not in calls and calls[-1] == "down"


def test_deferred_holds_a_signal_until_the_block_ends(interrupts: Interrupts) -> None:
    done = []
    with pytest.raises(KeyboardInterrupt, match="SIGINT"), interrupts.deferred():
        os.kill(os.getpid(), signal.SIGINT)
        done.append("rest of the block")
    assert done == ["rest of the block"] and interrupts.received == ["SIGINT"]


def test_a_signal_before_the_run_started_does_not_mark_a_later_run(tmp_path: Path) -> None:
    """The plugin and in-process callers run several experiments in one process: only this run's signals count."""
    earlier = Interrupts()
    earlier.received.append("SIGINT")  # an earlier run in this process was interrupted
    runner.TICK_S = 0.02
    exp = load_experiment_text(EXP, "engine.yaml")
    bundle = RunBundle.create(tmp_path, exp, backend="fake", backend_reason="test")
    result = Run(exp, FakeBackend(), bundle, parts=fake_parts([]), interrupts=earlier).execute()
    assert result.status == "completed", result.error
    assert not [e for e in read_history(result.run_dir / "history.jsonl").events if e["type"] == "signal"]


def test_install_forgets_earlier_signals_and_restore_puts_the_previous_handlers_back() -> None:
    before = {name: signal.getsignal(getattr(signal, name)) for name in INTERRUPT_SIGNALS}
    fresh = Interrupts()
    fresh.received.append("SIGTERM")
    previous = fresh.install()
    try:
        assert fresh.received == [] and not fresh.interrupted
    finally:
        Interrupts.restore(previous)
    assert {name: signal.getsignal(getattr(signal, name)) for name in INTERRUPT_SIGNALS} == before


# -- a signal while the backend brings the cluster up ------------------------------------------------

def test_a_signal_inside_a_call_stops_it_at_once_even_within_a_deferred_block(interrupts: Interrupts) -> None:
    reached: list[str] = []

    def bring_up() -> str:
        os.kill(os.getpid(), signal.SIGTERM)
        reached.append("after the signal")
        return "cluster"

    with pytest.raises(KeyboardInterrupt, match="SIGTERM"), interrupts.deferred():
        interrupts.call(bring_up)
    assert reached == [] and interrupts.received == ["SIGTERM"]


def _lands_as_it_returns(interrupts: Interrupts, signum: int) -> None:
    """Called by a function about to return: what CPython does when a signal arrives just then. The
    handler runs in that function's caller's frame (here: `Interrupts.call`'s, two frames up) before
    the caller has stored the result."""
    interrupts.handle(signum, sys._getframe(2))


def test_a_signal_landing_as_a_call_returns_is_held_until_its_result_is_stored(interrupts: Interrupts) -> None:
    stored: list[str] = []

    def bring_up() -> str:
        _lands_as_it_returns(interrupts, signal.SIGTERM)  # must not raise: the result would be lost
        return "cluster"

    with pytest.raises(KeyboardInterrupt, match="SIGTERM"), interrupts.deferred():
        stored.append(interrupts.call(bring_up))
        interrupts.handle(signal.SIGHUP, sys._getframe(0))  # in the caller's own frame: held too, only noted
        stored.append("rest of the block")
    assert stored == ["cluster", "rest of the block"] and interrupts.received == ["SIGTERM", "SIGHUP"]


class _SignalAsUpReturns(FakeBackend):
    """A backend whose `up()` gets a SIGTERM just as it returns the running cluster."""

    def __init__(self, interrupts: Interrupts) -> None:
        super().__init__()
        self.interrupts = interrupts

    def up(self, spec: ClusterSpec, workdir: Path) -> FakeCluster:
        cluster = super().up(spec, workdir)
        _lands_as_it_returns(self.interrupts, signal.SIGTERM)
        return cluster


class _HalfStarted:
    """Two nodes of which the second is still starting when the signal comes (the process backend's
    bring-up: `start_or_teardown` tears down what started)."""

    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def _start_all(self) -> None:
        self.calls.append("start zookeeper:1")
        self.calls.append("start broker:1")
        os.kill(os.getpid(), signal.SIGTERM)
        self.calls.append("broker:1 ready")

    def down(self) -> None:
        self.calls.append("down")


class _SignalInsideUp(FakeBackend):
    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def up(self, spec: ClusterSpec, workdir: Path) -> FakeCluster:
        start_or_teardown(_HalfStarted(self.calls))
        raise AssertionError("the signal should have stopped the bring-up")


def _run_with(backend: FakeBackend, tmp_path: Path, interrupts: Interrupts) -> runner.RunResult:
    runner.TICK_S = 0.02
    exp = load_experiment_text(EXP, "engine.yaml")
    bundle = RunBundle.create(tmp_path, exp, backend="fake", backend_reason="test")
    return Run(exp, backend, bundle, parts=fake_parts([]), interrupts=interrupts).execute()


def test_a_sigterm_as_the_backend_returns_the_cluster_still_tears_it_down_before_the_run_returns(
    tmp_path: Path, interrupts: Interrupts,
) -> None:
    backend = _SignalAsUpReturns(interrupts)
    result = _run_with(backend, tmp_path, interrupts)
    assert result.status == "interrupted" and result.error == "interrupted by SIGTERM"
    assert backend.cluster is not None and backend.cluster.calls == ["down"]
    events = read_history(result.run_dir / "history.jsonl").events
    assert [e["name"] for e in events if e["type"] == "phase"] == ["setup", "teardown"]
    assert [e["signal"] for e in events if e["type"] == "signal"] == ["SIGTERM"]


def test_a_sigterm_inside_the_backends_up_stops_the_bring_up_which_tears_down_what_started(
    tmp_path: Path, interrupts: Interrupts,
) -> None:
    backend = _SignalInsideUp()
    result = _run_with(backend, tmp_path, interrupts)
    assert result.status == "interrupted" and result.error == "interrupted by SIGTERM"
    assert backend.calls == ["start zookeeper:1", "start broker:1", "down"]
    events = read_history(result.run_dir / "history.jsonl").events
    assert [e["name"] for e in events if e["type"] == "phase"] == ["setup", "teardown"]
    assert events[-1]["type"] == "run.end" and events[-1]["status"] == "interrupted"
