"""The ZooKeeper-mode controller inside every reference broker: election, failover, and its event loop.

Owns `Controller`: one asyncio task per broker that races for the ephemeral `/controller` with
`harness.model.controller.elect_controller` (one Multi: create `/controller` + conditional bump of
`/controller_epoch`), watches `/controller` and races again when it vanishes; when it wins it runs
onControllerFailover (load brokers, topics, partition states; elect what has no leader; send
metadata to every live broker) and then handles, one event at a time as Kafka's event manager
does: broker loss/return/bounce (`/brokers/ids`), new and deleted topics (`/brokers/topics`), ISR
change notifications, controlled shutdown requests, preferred-replica elections (`ElectLeaders`,
`/admin/preferred_replica_election`, auto rebalance) and reassignment (`/admin/reassign_partitions`,
see `reassign.py`); the handlers are in `controller_events`. Every decision is the model's
(`harness.model.controller`); every partition state write is conditional on the znode version
and fenced by a Check of `/controller_epoch`'s version (a zombie's write fails). ZooKeeper reads
and writes run in worker threads; kazoo watches hop onto the loop with `call_soon_threadsafe`.
Requests to brokers go through `ControllerChannels`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kazoo.client import KazooState
from kazoo.exceptions import BadVersionError, NoNodeError
from kazoo.protocol.states import EventType

from harness.broker import bugs
from harness.broker import controller_events as ev
from harness.broker.channels import ControllerChannels
from harness.broker.clock import Clock, wall_ms
from harness.broker.interbroker import NOT_CONTROLLER
from harness.broker.reassign import Reassignments
from harness.broker.zkexec import KazooExecutor
from harness.model.controller import (
    ClusterView,
    ControllerElection,
    ControllerPlan,
    StateChange,
    elect_controller,
    on_controller_failover,
)
from harness.model.partition_state import PartitionState, state_path
from harness.model.zkmodel import Check, Create, Multi, ZkCode
from harness.zk.paths import (
    BROKER_IDS_PATH,
    CONTROLLER_EPOCH_PATH,
    CONTROLLER_PATH,
    ISR_CHANGE_NOTIFICATION_PATH,
    PREFERRED_REPLICA_ELECTION_PATH,
    REASSIGN_PARTITIONS_PATH,
    TOPICS_PATH,
    partition_path,
    topic_path,
)
from harness.zk.znodes import BrokerRegistration, ControllerRegistration, TopicAssignment, decode_controller_epoch

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from harness.broker.config import BrokerConfig

log = logging.getLogger(__name__)
TP = tuple[str, int]
RETRY_S = 0.5
AUTO_REBALANCE_FIRST_S = 5.0  # KafkaController.onControllerFailover: scheduleAutoLeaderRebalanceTask(delay = 5 s)
UNKNOWN_SERVER_ERROR = -1


class Fenced(Exception):
    """A write failed its Check on /controller_epoch: another controller was elected."""


def topic_config_path(topic: str) -> str:
    return f"/config/topics/{topic}"


class Controller:
    """This broker's controller role (inactive until it wins `/controller`)."""

    def __init__(self, config: BrokerConfig, zk_client: Callable[[], KazooClient | None],
                 wall: Clock = wall_ms) -> None:
        """`zk_client()`: this broker's ZooKeeper session (the controller runs only when there is one)."""
        self.config = config
        self.broker_id = config.broker_id
        self._zk_client = zk_client
        self.wall_ms = wall
        self.active = False
        self.epoch = 0
        self.epoch_zk_version = -1
        self.live: dict[int, BrokerRegistration] = {}
        self.czxid: dict[int, int] = {}
        self.assignments: dict[TP, tuple[int, ...]] = {}
        self.states: dict[TP, PartitionState] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.shutting_down: set[int] = set()
        self.channels = ControllerChannels(self)
        self.reassign = Reassignments(self)
        self._queue: asyncio.Queue[tuple[Any, ...]] = asyncio.Queue()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._periodic: list[asyncio.Task[None]] = []
        self._topic_watches: dict[str, Callable[[Any], None]] = {}
        self.elected_at: float | None = None

    # ---- plumbing --------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        client = self._zk_client()
        assert client is not None
        return client

    def post(self, *event: Any) -> None:
        """Queue an event from any thread."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._queue.put_nowait, event)

    def _on_watch(self, path: str) -> None:
        event = {CONTROLLER_PATH: "controller", BROKER_IDS_PATH: "brokers", TOPICS_PATH: "topics",
                 ISR_CHANGE_NOTIFICATION_PATH: "isr", REASSIGN_PARTITIONS_PATH: "reassign",
                 PREFERRED_REPLICA_ELECTION_PATH: "preferred"}.get(path)
        if event is not None:
            self.post(event)
        elif path.startswith(TOPICS_PATH + "/"):
            self.post("partitions", path[len(TOPICS_PATH) + 1:])

    def watcher(self, path: str) -> Callable[[Any], None]:
        """A one-shot kazoo watch for `path`; kazoo's session-expiry wake-ups (type NONE) are ignored."""
        def fire(event: Any) -> None:
            if getattr(event, "type", EventType.NONE) != EventType.NONE:
                self._on_watch(path)
        return fire

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST:
            self.post("session_lost")
        elif state == KazooState.CONNECTED:
            self.post("controller")

    async def zk(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.to_thread(fn, *args)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.client.add_listener(self._on_state)
        self._tasks.append(asyncio.create_task(self._run()))
        self.post("controller")

    async def close(self) -> None:
        for t in self._tasks + self._periodic:
            t.cancel()
        self.channels.close()
        with contextlib.suppress(Exception):
            self.client.remove_listener(self._on_state)

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                await self._handle(event)
            except Fenced:
                log.warning("controller %d (epoch %d) was fenced: a newer controller exists", self.broker_id,
                            self.epoch)
                self._resign()
                with contextlib.suppress(Exception):  # the election below looks at /controller either way
                    await self.zk(self._release_own_registration)
                self.post("controller")
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("controller event %s failed", event[0])
                self._retry(event)

    def _retry(self, event: tuple[Any, ...]) -> None:
        """A failed ZooKeeper-driven event (e.g. connection loss mid-way) runs again shortly: its one-shot
        watch was consumed, so without a retry the change would go unnoticed."""
        kind = event[0]
        if kind in ("controller", "brokers", "topics", "partitions", "isr", "reassign", "preferred") and self._loop:
            self._loop.call_later(RETRY_S, self.post, *event)
        elif kind in ("shutdown", "elect_leaders") and not event[-1].done():
            event[-1].set_result({"error_code": UNKNOWN_SERVER_ERROR})

    async def _handle(self, event: tuple[Any, ...]) -> None:
        kind = event[0]
        if kind == "controller":
            await self._on_controller_change()
        elif kind == "session_lost":
            self._resign()
        elif kind in ("shutdown", "elect_leaders") and not self.active:
            event[-1].set_result({"error_code": NOT_CONTROLLER})
        elif not self.active:
            return
        elif kind == "brokers":
            await ev.on_brokers(self)
        elif kind == "topics":
            await ev.on_topics(self)
        elif kind == "partitions":
            await ev.on_partitions(self, event[1])
        elif kind == "isr":
            await ev.on_isr(self)
        elif kind == "shutdown":
            event[2].set_result(await ev.on_shutdown_request(self, event[1]))
        elif kind == "elect_leaders":
            event[2].set_result(await ev.on_elect_leaders(self, event[1]))
        elif kind == "preferred":
            await ev.on_preferred_znode(self)
        elif kind == "rebalance":
            await ev.on_rebalance(self)
        elif kind == "reassign":
            await self.reassign.on_znode()

    # ---- election --------------------------------------------------------------------------
    async def _on_controller_change(self) -> None:
        if self.active:
            holder = await self.zk(self._holder)
            if holder == self.broker_id:
                return
            self._resign()
        result: ControllerElection = await self.zk(self._elect)
        if not result.won:
            log.info("broker %d: controller is %d", self.broker_id, result.controller_id)
            if result.controller_id == -1:
                self.post("controller")
            return
        self.active, self.epoch = True, int(result.epoch or 0)
        self.epoch_zk_version = int(result.epoch_zk_version or 0)
        self.elected_at = time.monotonic()
        log.warning("broker %d is now the controller with epoch %d", self.broker_id, self.epoch)
        await self._failover()

    def _release_own_registration(self) -> None:
        """After being fenced, delete `/controller` if this broker's own session still holds it (Kafka's
        `triggerControllerMove`). Otherwise the znode keeps naming a broker that no longer acts as controller,
        and no election runs again: seen once, a fenced controller resigned and then read "controller is 3"
        (itself) with nobody active, so a restarted broker never got metadata."""
        try:
            data, stat = self.client.get(CONTROLLER_PATH)
        except NoNodeError:
            return
        mine = stat.ephemeralOwner == self.client.client_id[0]
        if mine and ControllerRegistration.decode(data).broker_id == self.broker_id:
            log.warning("broker %d: deleting its own /controller after being fenced, so that an election runs",
                        self.broker_id)
            with contextlib.suppress(NoNodeError, BadVersionError):
                self.client.delete(CONTROLLER_PATH, version=stat.version)

    def _holder(self) -> int:
        try:
            data, _ = self.client.get(CONTROLLER_PATH, watch=self.watcher(CONTROLLER_PATH))
            return ControllerRegistration.decode(data).broker_id
        except NoNodeError:
            self.client.exists(CONTROLLER_PATH, watch=self.watcher(CONTROLLER_PATH))
            return -1

    def _elect(self) -> ControllerElection:
        ex = KazooExecutor(self.client, self._on_watch)
        me = self.broker_id
        bugged = bugs.SKIP_EPOCH_BUMP in self.config.reference_bugs
        stat = self.client.exists(CONTROLLER_EPOCH_PATH) if bugged else None
        if stat is None or stat.data_length == 0:
            # Honest election; with skip_epoch_bump also the first one, which creates /controller_epoch (an
            # empty or absent epoch znode is no epoch to keep, and observers could not read it).
            return elect_controller(ex, me, self.wall_ms())
        # Bug: claim /controller but keep the current epoch (Check instead of SetData epoch + 1).
        holder = self._holder()
        if holder != -1:
            return ControllerElection(me, False, holder)
        data, stat = self.client.get(CONTROLLER_EPOCH_PATH)
        epoch = decode_controller_epoch(data)
        res = ex.execute(Multi((Create(CONTROLLER_PATH, ControllerRegistration(me, self.wall_ms()).encode(),
                                       ephemeral=True), Check(CONTROLLER_EPOCH_PATH, stat.version))))
        if res.ok:
            return ControllerElection(me, True, me, epoch, stat.version)
        return ControllerElection(me, False, self._holder())

    def _resign(self) -> None:
        if not self.active:
            return
        log.warning("broker %d resigns as controller (epoch %d)", self.broker_id, self.epoch)
        self.active = False
        for t in self._periodic:
            t.cancel()
        self._periodic.clear()
        self.channels.close()
        self.live.clear()
        self.shutting_down.clear()
        self.reassign.reset()

    def live_ids(self) -> list[int]:
        return sorted(self.live)

    # ---- ZooKeeper reads (worker threads) --------------------------------------------------
    def _read_brokers(self) -> dict[int, tuple[BrokerRegistration, int]]:
        out: dict[int, tuple[BrokerRegistration, int]] = {}
        for child in self.client.get_children(BROKER_IDS_PATH, watch=self.watcher(BROKER_IDS_PATH)):
            with contextlib.suppress(NoNodeError, ValueError):
                data, stat = self.client.get(f"{BROKER_IDS_PATH}/{child}")
                out[int(child)] = (BrokerRegistration.decode(int(child), data), stat.czxid)
        return out

    def _read_topic(self, topic: str) -> tuple[dict[TP, tuple[int, ...]], dict[TP, PartitionState], dict[str, str]]:
        import json
        # Kafka's PartitionModificationsHandler: a data watch on the topic (one function per topic, so
        # kazoo keeps one watch however often the topic is read), for partitions added later.
        watch = self._topic_watches.setdefault(topic, self.watcher(topic_path(topic)))
        data, _ = self.client.get(topic_path(topic), watch=watch)
        assignment = TopicAssignment.decode(topic, data)
        ar = {(topic, p): tuple(r) for p, r in assignment.partitions.items()}
        states = self.refresh_states(ar)
        configs: dict[str, str] = {}
        with contextlib.suppress(NoNodeError, ValueError):
            cdata, _ = self.client.get(topic_config_path(topic))
            configs = {str(k): str(v) for k, v in json.loads(cdata).get("config", {}).items()}
        return ar, states, configs

    def _read_topics(self) -> list[str]:
        return sorted(self.client.get_children(TOPICS_PATH, watch=self.watcher(TOPICS_PATH)))

    def refresh_states(self, tps: Iterable[TP]) -> dict[TP, PartitionState]:
        out = {}
        for tp in tps:
            with contextlib.suppress(NoNodeError):
                data, stat = self.client.get(state_path(*tp))
                out[tp] = PartitionState.from_json(data, stat.version, state_path(*tp))
        return out

    # ---- decisions and writes --------------------------------------------------------------
    def honest_view(self) -> ClusterView:
        unclean = {t: c["unclean.leader.election.enable"].lower() == "true"
                   for t, c in self.topic_configs.items() if "unclean.leader.election.enable" in c}
        return ClusterView(frozenset(self.live), dict(self.assignments), dict(self.states),
                           frozenset(self.shutting_down), self.config.unclean_leader_election_enable, unclean)

    def view(self) -> ClusterView:
        """What the model decides from (with `unclean_election`: unclean election enabled everywhere)."""
        honest = self.honest_view()
        return bugs.unclean_election(honest) if bugs.UNCLEAN_ELECTION in self.config.reference_bugs else honest

    def _write(self, change: StateChange) -> ZkCode:
        if change.before is None:
            self.client.ensure_path(partition_path(*change.partition))
        res = KazooExecutor(self.client).execute(change.zk_op(self.epoch_zk_version))
        if res.ok:
            return ZkCode.OK
        if res.results and res.results[0].code is not ZkCode.OK:
            raise Fenced()
        return res.code

    async def decide(self, plan_of: Callable[[ClusterView], ControllerPlan]
                     ) -> tuple[list[StateChange], ControllerPlan]:
        """Run the plan the model makes from the current view; retry partitions whose state changed under us."""
        written: list[StateChange] = []
        plan = plan_of(self.view())
        for _round in range(3):
            changes = self._bugged(plan.changes)
            stale: list[TP] = []
            for ch in changes:
                if ch.partition in stale:
                    continue
                code = await self.zk(self._write, ch)
                if code is ZkCode.OK:
                    self.states[ch.partition] = ch.after
                    written.append(ch)
                    log.info("%s-%d: %s -> leader %d epoch %d ISR %s", ch.partition[0], ch.partition[1], ch.reason,
                             ch.after.leader, ch.after.leader_epoch, list(ch.after.isr))
                else:
                    stale.append(ch.partition)
            if not stale:
                break
            self.states.update(await self.zk(self.refresh_states, stale))
            plan = plan_of(self.view())
        return written, plan

    def removing_dead(self, plan_of: Callable[[ClusterView], ControllerPlan]
                      ) -> Callable[[ClusterView], ControllerPlan]:
        """`plan_of` for a plan that takes unregistered brokers out of the ISRs (broker failure, failover),
        as this controller runs it: with `keep_dead_in_isr`, minus the removals the bug skips."""
        if bugs.KEEP_DEAD_IN_ISR not in self.config.reference_bugs:
            return plan_of
        return lambda v: bugs.keep_dead_in_isr(plan_of(v), v)

    def _bugged(self, changes: Iterable[StateChange]) -> list[StateChange]:
        flags = self.config.reference_bugs
        out = list(changes)
        if bugs.ELECT_OUTSIDE_ISR in flags:
            out = bugs.elect_outside_isr(out, self.assignments, set(self.live) - self.shutting_down, self.epoch)
        if bugs.UNCLEAN_ELECTION in flags:
            out = bugs.mark_unclean(out, self.honest_view())
        return out

    def propagate(self, changes: Iterable[StateChange], extra_replicas: Iterable[int] = ()) -> None:
        """LeaderAndIsr for the changed partitions to their live replicas, then UpdateMetadata to all."""
        tps = sorted({ch.partition for ch in changes})
        if tps:
            self.channels.leader_and_isr(tps)
            self.channels.update_metadata(self.live_ids(), tps)

    # ---- failover --------------------------------------------------------------------------
    async def _failover(self) -> None:
        brokers = await self.zk(self._read_brokers)
        self.live = {i: reg for i, (reg, _) in brokers.items()}
        self.czxid = {i: cz for i, (_, cz) in brokers.items()}
        self.assignments.clear()
        self.states.clear()
        self.topic_configs.clear()
        for topic in await self.zk(self._read_topics):
            await self._load_topic(topic)
        # Kafka's onControllerFailover: ReplicaStateMachine.startup takes every replica of a broker that is not
        # registered out of every ISR (led or followed), then PartitionStateMachine.startup elects.
        written, _ = await self.decide(self.removing_dead(lambda v: on_controller_failover(v, self.epoch)))
        self.channels.update_metadata(self.live_ids(), full=True)
        for broker in self.live_ids():
            self.channels.leader_and_isr(sorted(self.assignments), only=broker)
        await self.zk(self._watch_admin)
        await ev.on_isr(self)
        await ev.on_preferred_znode(self)
        await self.reassign.on_znode()
        cfg = self.config
        if cfg.auto_leader_rebalance_enable:  # first check 5 s after failover, then every interval (as Kafka)
            self._periodic.append(asyncio.create_task(self._every(cfg.leader_imbalance_check_interval_seconds,
                                                                  "rebalance", AUTO_REBALANCE_FIRST_S)))
        if cfg.reference_controller_resend_ms > 0:
            self._periodic.append(asyncio.create_task(self._resend(cfg.reference_controller_resend_ms / 1000)))
        log.info("controller %d failover done: %d live brokers, %d partitions, %d state writes", self.broker_id,
                 len(self.live), len(self.assignments), len(written))

    async def _resend(self, seconds: float) -> None:
        """Re-send the current metadata to every live broker, beside the event queue (as Kafka's request
        send threads keep going while the event thread is busy): a resumed zombie sends at once."""
        while True:
            await asyncio.sleep(max(seconds, 0.05))
            if self.active:
                self.channels.update_metadata(self.live_ids())

    async def _every(self, seconds: float, event: str, first: float) -> None:
        await asyncio.sleep(first)
        while True:
            self.post(event)
            await asyncio.sleep(max(seconds, 0.05))

    def _watch_admin(self) -> None:
        self.client.get_children(ISR_CHANGE_NOTIFICATION_PATH, watch=self.watcher(ISR_CHANGE_NOTIFICATION_PATH))
        for path in (REASSIGN_PARTITIONS_PATH, PREFERRED_REPLICA_ELECTION_PATH):
            self.client.exists(path, watch=self.watcher(path))

    async def _load_topic(self, topic: str) -> None:
        try:
            ar, states, configs = await self.zk(self._read_topic, topic)
        except NoNodeError:
            return
        self.assignments.update(ar)
        self.states.update(states)
        self.topic_configs[topic] = configs
