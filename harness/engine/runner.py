"""The runner: executes one experiment's phases against a backend and records everything.

setup (cluster up, topics, observers) -> steady (workloads, probes) -> chaos (the schedule) ->
heal (every fault healed, probes again) -> drain (producers stop, consumers catch up) ->
teardown (every step attempted, on every exit path). Fault times are seconds from the start of
the chaos phase; the chaos phase lasts the experiment's `duration`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from harness.cluster.base import Cluster, ClusterBackend
from harness.cluster.links import LinkGraph
from harness.engine.backend_needs import cluster_spec
from harness.engine.bundle import RunBundle, client_info
from harness.engine.delivery import DeliveryCount, nothing_more_to_read
from harness.engine.freeze import FreezeWatchdog
from harness.engine.interrupts import INTERRUPTS, Interrupts
from harness.engine.lanes import FaultLanes
from harness.engine.parts import REAL_PARTS, RunParts
from harness.engine.storage import QuietFileHandler, StorageWatch
from harness.errors import HarnessError, StorageError
from harness.experiment.schema import Experiment
from harness.faults.inject import FaultInjector, MemberControl, ProducerControl
from harness.faults.migration_op import MigrationSwitch
from harness.faults.operations import GroupScaler, OperationRunner, ProducerRestarter, ReleaseSwitch
from harness.faults.schedule import PlannedFault, StepTimed, actions, ordered, plan, plan_operations
from harness.history.events import (
    FaultError,
    HistoryEvent,
    Phase,
    Probe,
    RunEnd,
    RunError,
    RunStart,
    Signal,
)
from harness.history.jsonl import HistoryWriter
from harness.history.probes import PROBES
from harness.history.state import ClusterState
from harness.observe.base import Observer
from harness.observe.metadata_log import record_metadata_log
from harness.waiting import poll_until
from harness.workload.base import Workload
from harness.workload.common import LIBRDKAFKA_LOGGER

TICK_S = 0.2
KAFKA_PYTHON_LOGGER = logging.getLogger("kafka")
OPERATION_SLACK_S = 10.0
"""How long past the longest operation timeout the heal phase waits for operations to end."""
TEARDOWN_OPERATION_WAIT_S = 2.0
SLOW_TEARDOWN_STEP_S = 2.0
"""A teardown step that takes this long is named on the console (a signalled run should exit within seconds)."""


class Progress(Protocol):
    def phase(self, name: str) -> None: ...

    def tick(self, *, elapsed: float, total: float, next_fault: str | None, events: int) -> None: ...

    def note(self, text: str) -> None: ...


class QuietProgress:
    def phase(self, name: str) -> None:
        pass

    def tick(self, *, elapsed: float, total: float, next_fault: str | None, events: int) -> None:
        pass

    def note(self, text: str) -> None:
        pass


@dataclass(frozen=True, slots=True)
class RunResult:
    run_dir: Path
    status: str
    """completed | aborted (steady state never reached) | crashed | interrupted | failed (its record could not be
    written: a full disk)"""
    error: str | None = None


class Run:
    def __init__(self, exp: Experiment, backend: ClusterBackend, bundle: RunBundle, *,
                 progress: Progress | None = None, parts: RunParts = REAL_PARTS,
                 interrupts: Interrupts | None = None) -> None:
        self.exp = exp
        self.interrupts = interrupts or INTERRUPTS
        self._signals_written = 0
        self.backend = backend
        self.bundle = bundle
        self.progress = progress or QuietProgress()
        self.parts = parts
        partitions = {t.name: t.partitions for t in exp.topics}
        self.state = ClusterState.expecting(range(1, exp.cluster.brokers + 1), partitions,
                                            [c.group for c in exp.workload.consumers])
        self.delivery = DeliveryCount()
        self.history: HistoryWriter | None = None
        self.cluster: Cluster | None = None
        self.observers: list[Observer] = []
        self.producers: list[Workload] = []
        self.consumers: list[Workload] = []
        self.injector: FaultInjector | None = None
        self.lanes = FaultLanes()
        self.operations: OperationRunner | None = None
        self.storage = StorageWatch()

    # -- event plumbing ------------------------------------------------------------------------

    def sink(self, event: HistoryEvent) -> None:
        assert self.history is not None
        self.history.write(event)
        self.state.apply(event)
        self.delivery(event)

    def _phase(self, name: str) -> None:
        self.progress.phase(name)
        self.sink(Phase(name=name))

    # -- the run -------------------------------------------------------------------------------

    def execute(self) -> RunResult:
        status, error = "completed", None
        clients_log = QuietFileHandler(str(self.bundle.dir / "clients.log"))
        clients_log.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
        LIBRDKAFKA_LOGGER.addHandler(clients_log)
        LIBRDKAFKA_LOGGER.setLevel(logging.INFO)
        KAFKA_PYTHON_LOGGER.addHandler(clients_log)  # the operator's reassignment client
        try:
            with FreezeWatchdog(self.bundle.dir):  # a GIL held forever ends the run as a crash (engine.freeze)
                return self._execute(status, error)
        finally:
            LIBRDKAFKA_LOGGER.removeHandler(clients_log)
            KAFKA_PYTHON_LOGGER.removeHandler(clients_log)
            clients_log.close()

    def _execute(self, status: str, error: str | None) -> RunResult:
        self._signals_written = before = len(self.interrupts.received)  # only this run's signals count
        history = HistoryWriter(self.bundle.history, columnar=True, on_failure=self.storage)
        self.history = history
        try:
            self.sink(RunStart(experiment=self.exp.name, variant=self.exp.variant, backend=self.backend.name,
                               seed=self.exp.seed))
            status, error = self._phases()
        except KeyboardInterrupt as exc:
            status, error = "interrupted", f"interrupted by {str(exc) or 'SIGINT'}"
            if len(self.interrupts.received) == before:  # the default SIGINT handler (no Interrupts installed)
                self.interrupts.received.append("SIGINT")
        finally:
            with self.interrupts.shielded():  # a second signal is noted, never cuts teardown short
                self._record_signals()
                failures = self._teardown()
                steps = self.operations.steps if self.operations is not None else []
                if steps and status == "completed":  # a migration: the KRaft controllers' own record of their phase
                    record_metadata_log(self.cluster, self.sink)
                if failures:
                    text = "; ".join(f"{step}: {exc}" for step, exc in failures)
                    self.sink(RunError(error=f"teardown: {text}"))
                    if status == "completed":
                        status, error = "crashed", f"teardown failed: {text}"
                self._record_signals()
                if len(self.interrupts.received) > before and status == "completed":  # signalled in teardown
                    status, error = "interrupted", f"interrupted by {self.interrupts.received[before]} during teardown"
                if history.failure is not None or status == "failed":
                    status, error = "failed", self._recover_history(history, error)
                self.sink(RunEnd(status=status, error=error))
                history.close()
                self.bundle.finish(status, error=error, events=history.count, **({"migration": steps} if steps else {}))
        return RunResult(self.bundle.dir, status, error)

    def _phases(self) -> tuple[str, str | None]:
        try:
            if not self._setup_and_steady():
                return "aborted", "steady state was not reached before chaos; no fault was injected"
            self._chaos()
            self._heal()
            self._drain()
        except StorageError as exc:  # the run's own record could not be written: stopped at once, torn down
            return "failed", str(exc)
        except Exception as exc:  # the run is recorded as crashed; teardown still runs
            error = f"{type(exc).__name__}: {exc}"
            self.sink(RunError(error=error))
            return "crashed", error
        return "completed", None

    def _recover_history(self, history: HistoryWriter, error: str | None) -> str:
        """After the disk filled up and the cluster is down: free the run's reserve, reopen the history (its torn
        line cut), and record why the run failed. Returns that reason."""
        failure = history.failure or self.storage.failure
        reason = str(failure) if failure is not None else error or "the run's record could not be written"
        self.bundle.release_reserve()
        if history.resume() and history.dropped:
            reason += f" ({history.dropped} events after it were not recorded)"
        with suppress(Exception):
            self.sink(RunError(error=reason))
        return reason

    def _record_signals(self) -> None:
        """One `signal` engine event per signal received and not yet written."""
        received = self.interrupts.received
        while self._signals_written < len(received):
            with suppress(Exception):
                self.sink(Signal(signal=received[self._signals_written]))
            self._signals_written += 1

    def _setup_and_steady(self) -> bool:
        self._phase("setup")
        self.cluster = self._bring_up()
        flavour = self.cluster.flavour
        info = dict(self.cluster.describe())
        self.bundle.update(broker={"flavour": flavour.name, "version": flavour.version,
                                   "describe": flavour.describe(), "choice": str(info.get("broker_choice") or "")},
                           cluster_info=info, client=client_info(self.exp, flavour.version))
        self.progress.note(f"cluster up: {flavour.describe()} at {self.cluster.bootstrap_servers}")
        self.parts.create_topics(self.exp, self.cluster)
        self.observers = list(self.parts.observers(self.exp, self.cluster, self.sink))
        for observer in self.observers:
            observer.start()
        self._phase("steady")
        self.consumers = list(self.parts.consumers(self.exp, self.cluster, self.sink))
        self.producers = list(self.parts.producers(self.exp, self.cluster, self.sink))
        for w in (*self.consumers, *self.producers):
            w.start()
        members: dict[str, MemberControl] = {
            getattr(w, "group", w.name): w for w in self.consumers  # type: ignore[misc]
        }
        topology = LinkGraph.of(self.exp.cluster)
        producers: dict[str, ProducerControl] = {
            getattr(w, "producer_id", w.name): w for w in self.producers if hasattr(w, "pause")  # type: ignore[misc]
        }
        self.injector = FaultInjector(self.cluster, self.state, topology, self.sink, members, producers)
        if self.exp.operations:
            scalers: dict[str, GroupScaler] = {
                getattr(w, "group", w.name): w for w in self.consumers if hasattr(w, "scale_to")  # type: ignore[misc]
            }
            restarters: dict[str, ProducerRestarter] = {
                getattr(w, "producer_id", w.name): w for w in self.producers if hasattr(w, "restart")  # type: ignore[misc]
            }
            self.operations = OperationRunner(self.parts.operator(self.cluster), self.sink, scalers, self.injector,
                                              restarters, self.cluster if isinstance(self.cluster, ReleaseSwitch)
                                              else None,
                                              self.cluster if isinstance(self.cluster, MigrationSwitch) else None)
        return self._await_probes("steady", self.exp.steady_timeout)

    def _bring_up(self) -> Cluster:
        """`backend.up()`, stopped by the first signal: the backend tears down what it started (the
        process backend's `start_or_teardown`) and the run records `interrupted`. A signal that lands
        just as `up()` returns is held until the cluster is the run's, so teardown stops it (it was left
        running until the interpreter's atexit fallback)."""
        with self.interrupts.deferred():
            self.cluster = self.interrupts.call(self.backend.up, cluster_spec(self.exp), self.bundle.dir / "cluster")
        return self.cluster

    def _await_probes(self, when: str, timeout_s: float) -> bool:
        results: dict[str, tuple[bool, str]] = {}

        def all_hold() -> bool:
            self.storage.check()
            results.update({name: PROBES[name][0](self.state) for name in self.exp.steady_state})
            return all(ok for ok, _ in results.values())

        done = bool(poll_until(all_hold, timeout_s, poll_s=TICK_S))
        for name, (ok, detail) in results.items():
            self.sink(Probe(name=name, ok=ok, detail=detail, when=when))
        if not done:
            self.progress.note(f"steady state not reached {when}: "
                               + "; ".join(d for ok, d in results.values() if not ok))
        return done

    def _chaos(self) -> None:
        assert self.injector is not None
        self._phase("chaos")
        start = time.monotonic()
        planned = plan(self.exp)
        todo = list(actions(tuple(f for f in planned if f.spec.during is None)))
        held = StepTimed(planned)  # timed from a migration step's start: ready once the step began
        ops = list(plan_operations(self.exp))
        while True:
            self.storage.check()
            elapsed = time.monotonic() - start
            if held.waiting and self.operations is not None:
                began = dict(self.operations.step_began)  # a copy: the operation's thread adds to it
                ready = held.ready({step: t - start for step, t in began.items()})
                if ready:
                    todo = list(ordered([*todo, *ready]))
            while ops and ops[0].start <= elapsed:
                op = ops.pop(0)
                assert self.operations is not None
                self.progress.note(f"start {op.describe()}")
                self.operations.start(op)
            while todo and todo[0].at <= elapsed:
                action = todo.pop(0)
                with self.interrupts.deferred():  # held while the schedule waits (INLINE_S at most)
                    self.lanes.run(action.fault.index, partial(self._act, action.what, action.fault))
            self.lanes.check()
            if elapsed >= self.exp.duration:
                self._not_injected(held.waiting, [a.fault for a in todo if a.what == "inject" and a.fault.spec.during])
                break
            upcoming = sorted([(a.at, f"{a.what} {a.fault.describe()}") for a in todo[:1]]
                              + [(o.start, f"start {o.describe()}") for o in ops[:1]])
            nxt = next((f"{what} at {at:.0f}s" for at, what in upcoming), None)
            assert self.history is not None
            self.progress.tick(elapsed=elapsed, total=self.exp.duration, next_fault=nxt, events=self.history.count)
            wait = min([TICK_S, self.exp.duration - elapsed] + [at - elapsed for at, _ in upcoming])
            time.sleep(max(wait, 0.0))

    def _not_injected(self, waiting: list[PlannedFault], late: list[PlannedFault]) -> None:
        """A `fault.skipped` for each fault timed `during` a migration step that the chaos phase ended without: its
        step never began, or began too late for it."""
        assert self.injector is not None
        for fault in waiting:
            self.injector.skip(fault, f"not injected: step {fault.spec.during} of migrate_to_kraft did not begin "
                                      "before the chaos phase ended")
        for fault in late:
            self.injector.skip(fault, f"not injected: timed {fault.start:.1f}s into the chaos phase (from the start "
                                      f"of step {fault.spec.during}), after its end at {self.exp.duration:.0f}s")

    def _act(self, what: str, fault: Any) -> None:
        assert self.injector is not None
        self.progress.note(f"{what} {fault.describe()}")
        try:
            if what == "inject":
                self.injector.inject(fault)
            else:
                self.injector.heal(fault)
        except HarnessError as exc:
            self.sink(FaultError(fault_id=fault.index, kind=fault.spec.kind, action=what, error=str(exc)))
            self.progress.note(f"{what} {fault.describe()} failed: {exc}")

    def _heal(self) -> None:
        assert self.injector is not None
        self._phase("heal")
        self.lanes.close()  # an action still under way (a slow stop, say) ends before everything is healed
        for step, exc in self.injector.heal_all():
            self.sink(FaultError(action="heal", error=f"{step}: {exc}"))
        if self.operations is not None:  # each ends by its own timeout; the slack covers the last poll
            if self.operations.running:
                self.progress.note(f"waiting for {', '.join(self.operations.running)} to end")
            self.operations.join(max(o.bound_s for o in plan_operations(self.exp)) + OPERATION_SLACK_S)
        if any(op.action == "migrate_to_kraft" for op in self.exp.operations):  # the probes read ZooKeeper's view
            self.progress.note("steady state not probed after heal: the cluster migrated to KRaft, and the probes "
                               "read ZooKeeper's view, which no longer holds the brokers")
            return
        self._await_probes("after heal", self.exp.steady_timeout)

    def _drain(self) -> None:
        self._phase("drain")
        for p in self.producers:
            p.stop()
        for p in self.producers:
            p.drain(self.exp.drain)
        deadline = time.monotonic() + self.exp.drain
        while (unseen := self.delivery.unseen()) and time.monotonic() < deadline:
            self.storage.check()
            if nothing_more_to_read(self.producers, self.consumers):
                self.progress.note(f"drain: the consumers read to the partitions' ends; {unseen} acked values "
                                   "not seen are not in the log")
                break
            time.sleep(TICK_S)
        for c in self.consumers:
            c.stop()
        for c in self.consumers:  # what is left of the drain's time (5 s at least): a group that fetches every 10 s
            # needs it when the last acks came late (weak-isr on 3.9.2: acks 33 s after the sends, then 5 s of group
            # drain ended unknown); a group that read to the end says so at once
            c.drain(max(min(5.0, self.exp.drain), deadline - time.monotonic()))

    def _teardown(self) -> list[tuple[str, BaseException]]:
        with suppress(Exception):
            self._phase("teardown")
        failures: list[tuple[str, BaseException]] = []

        def attempt(step: str, fn: Callable[[], None]) -> None:
            started = time.monotonic()
            try:
                fn()
            except Exception as exc:  # every step is attempted; all failures are reported
                failures.append((step, exc))
            took = time.monotonic() - started
            if took >= SLOW_TEARDOWN_STEP_S:
                self.progress.note(f"teardown: {step} took {took:.1f}s")

        attempt("end fault actions under way", self.lanes.close)
        injector = self.injector
        if injector is not None:
            attempt("heal every fault", lambda: failures.extend(injector.heal_all(teardown=True)))
        operations = self.operations
        if operations is not None:
            attempt("end operations", lambda: self._abandon_operations(operations))
        # The clients end side by side: each may wait on a broker the run left down (a consumer's LeaveGroup, an
        # Admin call's timeout), and none needs another gone first.
        closings = [(f"close workload {w.name}", w.close) for w in (*self.producers, *self.consumers)]
        closings += [(f"stop observer {o.name}", o.stop) for o in self.observers]
        with ThreadPoolExecutor(max_workers=max(1, len(closings)), thread_name_prefix="teardown") as pool:
            for step, fn in closings:
                pool.submit(attempt, step, fn)
        if self.cluster is not None:
            attempt("cluster down", self.cluster.down)
        return failures

    @staticmethod
    def _abandon_operations(operations: OperationRunner) -> None:
        """Operations still running at teardown (a crash or a signal cut the run short) get their `op.end`
        now, as errors; the threads record nothing after this."""
        operations.join(TEARDOWN_OPERATION_WAIT_S)
        operations.abandon("still running when the run was torn down")


def run_experiment(exp: Experiment, backend: ClusterBackend, *, backend_reason: str, runs_dir: Path,
                   progress: Progress | None = None, parts: RunParts = REAL_PARTS) -> RunResult:
    bundle = RunBundle.create(runs_dir, exp, backend=backend.name, backend_reason=backend_reason)
    return Run(exp, backend, bundle, progress=progress, parts=parts).execute()


__all__: Sequence[str] = ("Progress", "Run", "RunResult", "run_experiment")
