"""The consumer-group workload: N members of one group, each its own confluent-kafka Consumer on
its own thread (see `harness.workload.member` for the events and the generation source), with
the fault hooks `kill_member`, `pause_member`/`resume_member`, `restart_member`, `stop_member`
used for targets `consumer:<group>/<n>`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any

from harness.errors import TeardownError
from harness.history.events import GroupDrain
from harness.history.jsonl import EventSink
from harness.waiting import poll_until
from harness.workload.base import MemberClient
from harness.workload.common import LIBRDKAFKA_LOGGER, WorkloadConfigError, WorkloadError
from harness.workload.member import COMMIT_MODES, Member

_STRATEGIES = {"range", "roundrobin", "cooperative-sticky"}
_JOIN_TIMEOUT_S = 15.0
CLASSIC_SESSION_TIMEOUT_MS = 10_000
"""A classic-protocol member's session.timeout.ms unless the experiment sets one (librdkafka's default is 45 s).
librdkafka#5569 (open): a classic consumer sometimes does the KIP-394 join handshake twice and abandons the first
member id the broker gave it; the coordinator then holds the rebalance until that pending member's session times
out, and no member of the group holds a partition meanwhile. With the default that was a 44.6 s rebalance of a
two-member group at startup here (experiments/transactions.yaml on Apache Kafka 3.9.2, a loaded machine); 10 s
bounds it, as Kafka's own default did before 3.0."""


class ConsumerGroupWorkload:
    """`members` consumers of `group` subscribed to `topics`.

    - `strategy`: librdkafka `partition.assignment.strategy` (`range`, `roundrobin`,
      `cooperative-sticky`, or a comma list of them). With `group.protocol=consumer` in
      `extra_config` (KIP-848) the assignor is the broker's and `strategy` is not sent
      (set `group.remote.assignor` in `extra_config` to choose one).
    - `commit`: `auto` (librdkafka auto-commit, every `auto.commit.interval.ms`, default here
      1000 ms unless `extra_config` sets it), `sync`/`async` (commit() of the consumed
      positions every `commit_interval_s` when something new was read), `none`.
    - `stop()` does not stop consuming (consumers are passive; they keep reading while the
      producers drain); `drain(timeout_s)` polls until every live member has read up to the
      high watermark of every partition it owns and the members together own every partition
      of the topics, or the timeout passes (never raises: the history shows how far it got);
      `close()` closes every member gracefully and joins every thread.
    Use as a context manager (exit closes; entering does not start).
    """

    def __init__(
        self,
        bootstrap_servers: str,
        sink: EventSink,
        *,
        group: str,
        topics: Sequence[str],
        members: int,
        strategy: str = "range",
        extra_config: Mapping[str, str] | None = None,
        commit: str = "auto",
        commit_interval_s: float = 1.0,
        auto_offset_reset: str = "earliest",
        poll_timeout_s: float = 0.1,
        isolation: str = "read_committed",
        new_member: Callable[..., MemberClient] | None = None,
    ) -> None:
        """`new_member` makes a slot's member (keyword arguments as `Member`'s but `poll_timeout_s`); default: a
        librdkafka `Member`. The Java client's is `java_client.WorkerMember` with its client and work directory."""
        who = f"ConsumerGroupWorkload({group!r})"
        if not group:
            raise WorkloadConfigError(who, "group", group, "a non-empty group id")
        if isinstance(topics, str) or not topics or not all(topics):
            raise WorkloadConfigError(who, "topics", topics, "a non-empty list of topic names")
        if members < 1:
            raise WorkloadConfigError(who, "members", members, "at least 1")
        names = [s.strip() for s in strategy.split(",")]
        if not all(n in _STRATEGIES for n in names):
            raise WorkloadConfigError(who, "strategy", strategy, f"one or more of {sorted(_STRATEGIES)}")
        if commit not in COMMIT_MODES:
            raise WorkloadConfigError(who, "commit", commit, f"one of {list(COMMIT_MODES)}")
        if isolation not in ("read_committed", "read_uncommitted"):
            raise WorkloadConfigError(who, "isolation", isolation, "read_committed or read_uncommitted")
        if not commit_interval_s > 0:
            raise WorkloadConfigError(who, "commit_interval_s", commit_interval_s, "seconds > 0")
        self.name = f"consumers:{group}"
        self.group = group
        self.topics = list(topics)
        self.members = members
        self.strategy = ",".join(names)
        self.commit = commit
        self._sink = sink
        extra = dict(extra_config or {})
        self.group_protocol = str(extra.get("group.protocol", "classic")).lower()
        self._incremental = self.group_protocol == "consumer" or "cooperative-sticky" in names
        base: dict[str, Any] = {
            "bootstrap.servers": bootstrap_servers,
            "group.id": group,
            "auto.offset.reset": auto_offset_reset,
            "enable.auto.commit": commit == "auto",
            "isolation.level": isolation,
            "logger": LIBRDKAFKA_LOGGER,
        }
        if commit == "auto":
            base["auto.commit.interval.ms"] = 1000
        if self.group_protocol != "consumer":
            base["partition.assignment.strategy"] = self.strategy
            base["session.timeout.ms"] = CLASSIC_SESSION_TIMEOUT_MS
        base.update(extra)
        self._base_config = base
        self._commit_interval_s = commit_interval_s
        self._poll_timeout_s = poll_timeout_s
        self._new_member_client = new_member
        self._slots: list[MemberClient | None] = [None] * members
        self._incarnations = [0] * members
        self._retired: list[MemberClient] = []
        self._stopping = False
        self._checked: set[int] = set()
        """The members (`id`) `read_to_the_end` set checking whether they caught up."""
        self.last_drain_complete = False

    # -- introspection -------------------------------------------------------------------------
    @property
    def client_config(self) -> dict[str, Any]:
        """The librdkafka configuration every member starts from (a copy; client.id is per member)."""
        return dict(self._base_config)

    @property
    def incremental(self) -> bool:
        """Whether rebalances are incremental (cooperative-sticky or KIP-848) rather than eager."""
        return self._incremental

    @property
    def member_count(self) -> int:
        """Members whose client is running (paused ones included, killed/stopped ones not)."""
        return sum(1 for m in self._slots if m is not None and m.alive)

    def member(self, n: int) -> MemberClient:
        """The current incarnation of slot n (raises when the slot has never been started)."""
        member = self._slots[self._check_slot(n)]
        if member is None:
            raise WorkloadError(f"{self.name}: member {n} has not been started")
        return member

    def assignments(self) -> dict[int, frozenset[tuple[str, int]]]:
        """Slot -> partitions its live member currently owns (as the member's callbacks saw them)."""
        return {n: m.assignment for n, m in enumerate(self._slots) if m is not None and m.alive}

    def _check_slot(self, n: int) -> int:
        if not 0 <= n < self.members:
            raise WorkloadError(f"{self.name}: member index {n} out of range 0..{self.members - 1}")
        return n

    # -- lifecycle -----------------------------------------------------------------------------
    def _new_member(self, n: int) -> MemberClient:
        self._incarnations[n] += 1
        config = dict(self._base_config)
        config.setdefault("client.id", f"{self.group}-{n}")
        if self._new_member_client is not None:
            return self._new_member_client(group=self.group, slot=n, topics=self.topics, config=config,
                                           commit=self.commit, commit_interval_s=self._commit_interval_s,
                                           incremental=self._incremental, sink=self._sink)
        return Member(
            group=self.group,
            slot=n,
            topics=self.topics,
            config=config,
            commit=self.commit,
            commit_interval_s=self._commit_interval_s,
            incremental=self._incremental,
            sink=self._sink,
            poll_timeout_s=self._poll_timeout_s,
        )

    def start(self) -> None:
        if any(m is not None for m in self._slots):
            raise WorkloadError(f"{self.name}: start() called twice")
        for n in range(self.members):
            self._start_slot(n)

    def _start_slot(self, n: int) -> None:
        member = self._new_member(n)
        self._slots[n] = member
        member.start()

    def stop(self) -> None:
        """No effect on consuming (see the class doc); marks the workload as winding down."""
        self._stopping = True

    def read_to_the_end(self) -> bool:
        """Whether the group has read everything below the high watermarks now (`base.ReadsToTheEnd`): the live
        members check it while draining (`drain`'s rule), which the first call turns on for each member."""
        live = [m for m in self._slots if m is not None and m.alive]
        for m in live:
            if id(m) not in self._checked:
                self._checked.add(id(m))
                m.set_draining(True)
        return bool(live) and self._drained(live)

    def drain(self, timeout_s: float) -> None:
        """Poll until the group has read everything below the high watermarks, or `timeout_s` passes."""
        live = [m for m in self._slots if m is not None and m.alive]
        for m in live:
            if id(m) not in self._checked:  # a member `read_to_the_end` set checking keeps what it found
                m.set_draining(True)
        self._checked.clear()

        def drained() -> bool:
            live = [m for m in self._slots if m is not None and m.alive]
            return bool(live) and self._drained(live)

        self.last_drain_complete = False
        try:
            self.last_drain_complete = bool(poll_until(drained, timeout_s, poll_s=0.1))
        finally:
            for slot in self._slots:
                if slot is not None:
                    slot.set_draining(False)
            self._sink(GroupDrain(src=f"group:{self.group}", group=self.group, ok=self.last_drain_complete,
                                  detail=None if self.last_drain_complete else self._behind()))

    def _behind(self) -> str:
        """Who was behind where when the drain ended (the `group.drain` event's detail)."""
        report = self.drain_report()
        if not report:
            return "no live member"
        owned = {tp for r in report.values() for tp in r["owned"]}
        known = {tp for r in report.values() for tp in r["known"]}
        parts = [f"member {n}: " + ("paused" if r["paused"] else str(r["last_check_error"] or "not caught up"))
                 for n, r in report.items() if r["paused"] or not r["caught_up"]]
        if known - owned:
            parts.append("unowned: " + ", ".join(f"{t}/{p}" for t, p in sorted(known - owned)))
        return "; ".join(parts) or "caught up only after the drain's end"

    def drain_report(self) -> dict[int, dict[str, Any]]:
        """Per live slot: what `drain` looks at (for diagnostics when it did not complete)."""
        return {
            n: {
                "member": m.member_id,
                "paused": m.paused,
                "caught_up": m.caught_up,
                "owned": sorted(m.assignment),
                "known": sorted(m.known_partitions),
                "last_check_error": m.last_check_error,
            }
            for n, m in enumerate(self._slots)
            if m is not None and m.alive
        }

    @staticmethod
    def _drained(live: list[MemberClient]) -> bool:
        expected: set[tuple[str, int]] = set()
        owned: set[tuple[str, int]] = set()
        for m in live:
            assigned = m.assignment  # before the flag: a member clears it before it shows a new assignment
            if m.paused or not m.caught_up:
                return False
            expected |= m.known_partitions
            owned |= assigned
        return bool(expected) and expected <= owned

    def close(self) -> None:
        """Close every member gracefully (in parallel) and join every thread; TeardownError lists failures."""
        failures: list[tuple[str, BaseException]] = []
        members = [m for m in self._slots if m is not None] + self._retired
        for m in members:
            m.resume()
            m.end("close")
        for m in members:
            if not m.join(_JOIN_TIMEOUT_S):
                failures.append((f"{m.src}: join", TimeoutError(f"thread alive after {_JOIN_TIMEOUT_S}s")))
            if m.failure is not None:
                failures.append((f"{m.src}: member thread", m.failure))
                m.failure = None
        self._retired = [m for m in members if m.alive]
        if failures:
            raise TeardownError(failures)

    def __enter__(self) -> ConsumerGroupWorkload:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- fault hooks (targets consumer:<group>/<n>) --------------------------------------------
    def _end_member(self, n: int, mode: str) -> None:
        member = self._slots[self._check_slot(n)]
        if member is None or not member.alive:
            return
        member.resume()
        member.end(mode)
        if not member.join(_JOIN_TIMEOUT_S):
            self._retired.append(member)
            raise WorkloadError(f"{member.src}: did not end ({mode}) within {_JOIN_TIMEOUT_S}s")
        if member.failure is not None:
            failure, member.failure = member.failure, None
            raise WorkloadError(f"{member.src}: member thread failed: {failure}") from failure

    def kill_member(self, n: int) -> None:
        """End member n abruptly, as SIGKILL would: no LeaveGroup, no final commit."""
        self._end_member(n, "kill")

    def stop_member(self, n: int) -> None:
        """End member n gracefully: revoke callbacks, final commit (auto), LeaveGroup."""
        self._end_member(n, "close")

    def pause_member(self, n: int) -> None:
        """Member n stops calling poll() (its client stays connected and heartbeating)."""
        self.member(n).pause()

    def resume_member(self, n: int) -> None:
        self.member(n).resume()

    def scale_to(self, members: int, *, abrupt: bool = False) -> str:
        """Grow or shrink the group to `members` live members: new slots (numbered after the last) start new
        clients; the highest-numbered live members end, cleanly (LeaveGroup) or, with `abrupt`, as SIGKILL
        would; 0 stops them all (the application is down, the group Empty). Returns what changed, in words."""
        if members < 0:
            raise WorkloadError(f"{self.name}: cannot scale to {members} members (at least 0)")
        live = [n for n, m in enumerate(self._slots) if m is not None and m.alive]
        if members > len(live):
            added = list(range(len(self._slots), len(self._slots) + members - len(live)))
            self._incarnations.extend([0] * len(added))
            self._slots.extend([None] * len(added))  # one step (the GIL): a fault addressing a slot sees it or not
            self.members = len(self._slots)
            for n in added:
                self._start_slot(n)
            return f"{len(live)} -> {members} members: started {', '.join(f'{self.group}/{n}' for n in added)}"
        leaving = live[members:]
        for n in reversed(leaving):
            self._end_member(n, "kill" if abrupt else "close")
        how = "killed" if abrupt else "closed"
        return (f"{len(live)} -> {members} members: {how} {', '.join(f'{self.group}/{n}' for n in reversed(leaving))}"
                if leaving else f"{len(live)} members already")

    def restart_member(self, n: int, *, graceful: bool = False) -> None:
        """Start a new client (new member id) in slot n, ending the current one first if alive
        (abruptly unless `graceful`)."""
        self._end_member(n, "close" if graceful else "kill")
        self._start_slot(n)
