"""The reference broker process core: listeners, connections, dispatch, and the broker's state.

Owns `Broker`: one asyncio TCP server per listener; per connection, requests are read, handled
and answered strictly in order (as Kafka does by muting a channel until its response is sent);
dispatch by API key to the handler modules (the private inter-broker keys 10000+ to
`handlers_controller`); and the state handlers share (topics and logs, the metadata cache, the
replica manager and fetchers, producer state, the group coordinator service, committed offsets,
ZooKeeper registration, the controller), and the wiring: the one place that builds those components and
hands each the collaborators it needs; the handlers get the broker itself, typed by the Protocol of what they
use (`AdminHost`, `DataHost`, `GroupHost`, `PartitionsHost`, `ControllerHost`, `TopicHost`).
Start-up order: load logs (recovery) and HW checkpoints -> listeners bound -> ZooKeeper
registration (so a registered broker already answers) -> controller election. Without
`zookeeper.connect` the broker runs standalone: it is its own controller and the leader of every
local partition. Shutdown reverses it, attempting every step and raising `TeardownError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from kazoo.client import KazooClient

from harness.broker import (
    bugs,
    handlers_admin,
    handlers_controller,
    handlers_data,
    handlers_group,
    handlers_partitions,
)
from harness.broker.config import BrokerConfig, Listener
from harness.broker.controller import Controller
from harness.broker.fetcher import FetcherManager
from harness.broker.group_service import GroupService
from harness.broker.interbroker import PRIVATE_APIS
from harness.broker.metadata import MetadataCache, PartitionInfo
from harness.broker.offsets import OffsetStore
from harness.broker.producer_state import PartitionProducers, ProducerIds
from harness.broker.protocol import (
    APIS,
    Ctx,
    decode_request,
    encode_response,
    peek_header,
    unsupported_api_versions,
)
from harness.broker.replica import ReplicaManager
from harness.broker.topics import TopicStore
from harness.broker.zk import ZkRegistration
from harness.errors import BackendError, ProtocolError, TeardownError

log = logging.getLogger(__name__)
_BIG_BUFFER = 1 << 20


Handler = Callable[["Broker", Ctx, Any], Awaitable[Any]]
HANDLERS: dict[int, Handler] = {
    **handlers_admin.HANDLERS,
    **handlers_data.HANDLERS,
    **handlers_group.HANDLERS,
    **handlers_partitions.HANDLERS,
    43: handlers_controller.elect_leaders,
}


class Broker:
    """One reference broker: `await start()`, then serve until `await stop()`."""

    def __init__(self, config: BrokerConfig) -> None:
        """The wiring: every component gets the collaborators it needs (handlers get this broker, typed by
        the Protocol of what they use: `AdminHost`, `DataHost`, `GroupHost`, `PartitionsHost`, `ControllerHost`)."""
        self.config = config
        self.zk: ZkRegistration | None = None
        self.controller: Controller | None = None
        self.topics = TopicStore(config)
        self.metadata = MetadataCache()
        self.producers: dict[tuple[str, int], PartitionProducers] = {}
        self.producer_ids = ProducerIds(self.topics.dirs[0], config.broker_id, self.zk_client,
                                        reuse=bugs.REUSE_PRODUCER_IDS in config.reference_bugs)
        self.fetchers = FetcherManager(config, self.topics, self.metadata)
        self.replicas = ReplicaManager(config, self.topics, self.metadata, self.producers, self.fetchers,
                                       self._on_leadership, self.zk_client)
        self.offsets = OffsetStore(config.offsets_topic_num_partitions, self.topics, self.replicas,
                                   config.offsets_commit_timeout_ms)
        self.groups = GroupService(config, self.offsets)
        self.cluster_id = ""
        self.bound: dict[str, Listener] = {}
        self._servers: list[asyncio.base_events.Server] = []
        self._writers: set[asyncio.StreamWriter] = set()
        self._flusher: asyncio.Task[None] | None = None
        self.started = asyncio.Event()

    def _on_leadership(self, tp: tuple[str, int], leading: bool) -> None:
        self.groups.on_leadership(tp, leading)

    # ---- identities ------------------------------------------------------------------------
    def zk_client(self) -> KazooClient | None:
        """This broker's ZooKeeper session (None when standalone or before registration)."""
        return self.zk.client if self.zk is not None else None

    @property
    def broker_id(self) -> int:
        return self.config.broker_id

    def advertised(self, listener: str) -> Listener:
        """This broker's address on `listener` as clients on that listener must use it."""
        for lst in self.config.advertised():
            if lst.name == listener:
                bound = self.bound.get(listener)
                port = lst.port or (bound.port if bound else 0)
                return Listener(lst.name, lst.host, port)
        raise ProtocolError(f"no listener named {listener}")

    def leader_epoch(self, topic: str, partition: int) -> int:
        p = self.replicas.partitions.get((topic, partition))
        return p.leader_epoch if p is not None else 0

    @property
    def standalone(self) -> bool:
        return not self.config.zookeeper_connect

    def local_leader(self, topic: str, partition: int) -> None:
        """Standalone mode: this broker leads `topic`-`partition` with ISR [itself] (part-1 behaviour)."""
        t = self.topics.topics.get(topic)
        me = self.broker_id
        self.replicas.apply({"topic": topic, "partition": partition, "leader": me, "leader_epoch": 0, "isr": [me],
                             "replicas": [me], "zk_version": 0, "controller_epoch": 0,
                             "configs": dict(t.configs) if t else {}})
        self.metadata.put(topic, partition, PartitionInfo(me, 0, (me,), (me,)))
        self.metadata.notify()

    def producer_state(self, topic: str, partition: int) -> PartitionProducers:
        key = (topic, partition)
        state = self.producers.get(key)
        if state is None:
            state = self.producers[key] = PartitionProducers()
            plog = self.topics.partition(topic, partition)
            if plog is not None:
                for h, _seg in plog.batches(0):
                    state.update(h, h.base_offset)
        return state

    # ---- lifecycle -------------------------------------------------------------------------
    async def start(self) -> None:
        cfg = self.config
        if cfg.ignored:
            log.warning("ignoring %d Kafka properties this broker does not implement: %s",
                        len(cfg.ignored), ", ".join(cfg.ignored))
        if cfg.reference_bugs:
            log.warning("!!! reference.bugs=%s: this broker MISBEHAVES ON PURPOSE (see harness/broker/bugs.py) !!!",
                        ",".join(sorted(cfg.reference_bugs)))
            if bugs.unknown_bugs(cfg.reference_bugs):
                log.warning("unknown bug flags (no effect): %s", ", ".join(bugs.unknown_bugs(cfg.reference_bugs)))
        self.topics.load()
        self.replicas.load_checkpoints()
        for lst in cfg.listeners:
            try:
                server = await asyncio.start_server(
                    functools.partial(self._on_connect, lst.name),
                    host=lst.host or "0.0.0.0", port=lst.port, limit=_BIG_BUFFER)
            except OSError as exc:
                raise BackendError(f"broker {cfg.broker_id}: cannot listen on {lst.render()}: {exc}") from exc
            self._servers.append(server)
            port = server.sockets[0].getsockname()[1]
            self.bound[lst.name] = Listener(lst.name, lst.host, port)
            log.info("listening on %s://%s:%d", lst.name, lst.host or "0.0.0.0", port)
        if cfg.zookeeper_connect:
            self.zk = ZkRegistration(cfg, tuple(self.advertised(lst.name) for lst in cfg.listeners))
            await asyncio.to_thread(self.zk.start)
            self.cluster_id = self.zk.cluster_id
            self.controller = Controller(cfg, self.zk_client)
            self.controller.start()
            if not await self.wait_first_metadata():
                log.warning("no metadata from a controller yet; serving anyway")
        else:
            log.warning("zookeeper.connect is empty: running standalone (own controller, leader of every partition)")
            self.cluster_id = self._local_cluster_id()
            me = self.broker_id
            self.metadata.controller_id = me
            self.metadata.set_brokers({me: tuple(self._endpoints())})
            for tname, t in list(self.topics.topics.items()):
                for p in sorted(t.partitions):
                    self.local_leader(tname, p)
        self.replicas.start()
        self.topics.write_meta(self.cluster_id)
        if cfg.log_flush_interval_ms > 0:
            self._flusher = asyncio.create_task(self._flush_loop(cfg.log_flush_interval_ms / 1000))
        self.started.set()
        log.info("broker %d started (cluster %s); log flush policy: %s", cfg.broker_id, self.cluster_id,
                 "fsync every batch before acknowledging" if cfg.flush_every_batch()
                 else f"fsync every {cfg.log_flush_interval_messages} messages / "
                      f"{cfg.log_flush_interval_ms} ms, else on segment roll (OS page cache otherwise)")

    def has_metadata(self) -> bool:
        return self.broker_id in self.metadata.brokers and self.metadata.controller_id >= 0

    async def wait_first_metadata(self, timeout_s: float | None = None) -> bool:
        """Until the controller's first UpdateMetadata names this broker (bounded, default 2 x the session
        timeout, at most 15 s): before that, Metadata would show clients no brokers and no controller, and
        librdkafka waits long before asking again. Metadata-serving handlers call this too."""
        if timeout_s is None:
            timeout_s = min(2 * self.config.zookeeper_session_timeout_ms, 15000) / 1000
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not self.has_metadata():
            left = deadline - loop.time()
            if left <= 0:
                return False
            await self.metadata.wait_changed(min(left, 0.2))
        return True

    def _endpoints(self) -> list[Any]:
        from harness.zk.znodes import Endpoint
        return [Endpoint(lst.name, lst.host, lst.port, self.config.security_protocol(lst.name))
                for lst in (self.advertised(x.name) for x in self.config.listeners)]

    def _local_cluster_id(self) -> str:
        meta = self.topics.dirs[0] / "meta.properties"
        if meta.exists():
            for line in meta.read_text().splitlines():
                if line.startswith("cluster.id="):
                    return line.split("=", 1)[1].strip()
        return uuid.uuid4().hex[:22]

    async def _flush_loop(self, every_s: float) -> None:
        while True:
            await asyncio.sleep(every_s)
            for t in list(self.topics.topics.values()):
                for p in list(t.partitions.values()):
                    if p.unflushed_messages:
                        p.flush()

    async def stop(self) -> None:
        """Clean shutdown: deregister, close listeners and connections, stop timers, close logs."""
        failures: list[tuple[str, BaseException]] = []
        steps: list[tuple[str, Callable[[], Any]]] = []
        if self.controller is not None:
            try:
                await self.controller.close()
            except Exception as exc:
                failures.append(("controller", exc))
        steps.append(("fetchers", self.fetchers.close))
        steps.append(("replica manager", self.replicas.close))
        if self.zk is not None:
            steps.append(("zookeeper deregistration", self.zk.stop))
        steps.append(("group timers", self.groups.close))
        for s in self._servers:
            steps.append((f"listener {s.sockets[0].getsockname() if s.sockets else '?'}", s.close))
        for w in list(self._writers):
            steps.append(("connection", w.close))
        if self._flusher is not None:
            steps.append(("flusher", self._flusher.cancel))
        steps.append(("logs", self.topics.close))
        for name, step in steps:
            try:
                if name == "zookeeper deregistration":
                    await asyncio.to_thread(step)
                else:
                    step()
            except Exception as exc:
                failures.append((name, exc))
        if failures:
            raise TeardownError(failures)

    # ---- connections -----------------------------------------------------------------------
    async def _on_connect(self, listener: str, reader: asyncio.StreamReader,
                          writer: asyncio.StreamWriter) -> None:
        await self._connection(reader, writer, listener)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                          listener: str) -> None:
        peer = writer.get_extra_info("peername")
        host = f"/{peer[0]}" if peer else "/unknown"
        self._writers.add(writer)
        max_size = self.config.socket_request_max_bytes
        try:
            while True:
                size = int.from_bytes(await reader.readexactly(4), "big", signed=True)
                if not 0 < size <= max_size:
                    raise ProtocolError(f"request size {size} outside 1..socket.request.max.bytes={max_size}")
                frame = await reader.readexactly(size)
                out = await self._handle(frame, listener, host)
                if out is not None:
                    writer.write(out)
                    if writer.transport.get_write_buffer_size() > _BIG_BUFFER:
                        await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        except ProtocolError as exc:
            log.warning("closing connection from %s on %s: %s", host, listener, exc)
        except Exception:
            log.exception("closing connection from %s on %s after an internal error", host, listener)
        finally:
            self._writers.discard(writer)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _handle(self, frame: bytes, listener: str, host: str) -> bytes | None:
        head = peek_header(frame)
        if head.api_key in PRIVATE_APIS:
            return await handlers_controller.handle_private(self, frame)
        if head.api_key == 18 and head.api_version > APIS[18].max_version:
            return unsupported_api_versions(head)
        req = decode_request(head, frame)
        client_id = getattr(req.header, "client_id", None) or ""
        response = await HANDLERS[head.api_key](self, Ctx(head, listener, client_id, host), req)
        if response is None:
            return None
        return encode_response(response, head.correlation_id)
