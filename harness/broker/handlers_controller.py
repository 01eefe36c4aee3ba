"""Handlers of the private inter-broker requests (LeaderAndIsr, UpdateMetadata, StopReplica,
ControlledShutdown) and of ElectLeaders, plus this broker's side of controlled shutdown.

Owns epoch fencing on the receiving side: a request whose `controller_epoch` is older than the
highest this broker accepted is answered STALE_CONTROLLER_EPOCH and logged (unless the
`zombie_controller` bug flag is set: then it is obeyed and its sender adopted as controller).
ControlledShutdown is answered by the active controller (NOT_CONTROLLER elsewhere).
`controlled_shutdown(broker)` is what SIGTERM runs before the clean stop: ask the controller to
move this broker's leaderships (retrying `controlled.shutdown.max.retries` times), then wait
(bounded) until this broker leads no partition with more than one replica (skipped altogether with the
`shutdown_without_moving_leaders` bug flag).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Protocol

from kafka.protocol.admin import ElectLeadersResponse
from kazoo.exceptions import NoNodeError

from harness.broker import bugs
from harness.broker.interbroker import (
    CONTROLLED_SHUTDOWN,
    LEADER_AND_ISR,
    NOT_CONTROLLER,
    PRIVATE_APIS,
    STALE_CONTROLLER_EPOCH,
    STOP_REPLICA,
    UPDATE_METADATA,
    PeerConnection,
    PeerError,
    decode_private_request,
    encode_private_response,
)
from harness.broker.metadata import endpoints_from_json
from harness.broker.protocol import build_response
from harness.zk.paths import CONTROLLER_PATH, broker_path
from harness.zk.znodes import BrokerRegistration, ControllerRegistration

if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from harness.broker.config import BrokerConfig
    from harness.broker.controller import Controller
    from harness.broker.metadata import MetadataCache
    from harness.broker.protocol import Ctx
    from harness.broker.replica import ReplicaManager

log = logging.getLogger(__name__)


class ControllerHost(Protocol):
    """What the controller-to-broker requests, ElectLeaders and the controlled shutdown need of the broker."""

    config: BrokerConfig
    controller: Controller | None
    metadata: MetadataCache
    replicas: ReplicaManager

    @property
    def broker_id(self) -> int: ...

    def zk_client(self) -> KazooClient | None: ...


def _fenced(b: ControllerHost, name: str, body: dict[str, Any]) -> bool:
    """Whether to reject a controller request (and record the sender as controller otherwise)."""
    epoch, sender = int(body.get("controller_epoch", -1)), int(body.get("controller_id", -1))
    md = b.metadata
    if epoch < md.controller_epoch:
        if bugs.ZOMBIE_CONTROLLER not in b.config.reference_bugs:
            log.warning("rejected %s from controller %d: STALE_CONTROLLER_EPOCH (epoch %d < known %d)", name, sender,
                        epoch, md.controller_epoch)
            return True
        log.warning("accepted %s from controller %d with stale epoch %d < %d [bug zombie_controller]", name, sender,
                    epoch, md.controller_epoch)
        md.controller_epoch, md.controller_id = epoch, sender
        return False
    md.controller_epoch, md.controller_id = epoch, sender
    return False


async def handle_private(b: ControllerHost, frame: bytes) -> bytes:
    api, corr, _client, body = decode_private_request(frame)
    name = PRIVATE_APIS.get(api, str(api))
    if api == CONTROLLED_SHUTDOWN:
        ctl = b.controller
        if ctl is None:
            return encode_private_response(corr, {"error_code": NOT_CONTROLLER})
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        ctl.post("shutdown", int(body["broker_id"]), fut)
        return encode_private_response(corr, await fut)
    if _fenced(b, name, body):
        return encode_private_response(corr, {"error_code": STALE_CONTROLLER_EPOCH})
    if api == LEADER_AND_ISR:
        for d in body.get("leaders", ()):
            bid, eps = endpoints_from_json(d)
            if bid not in b.metadata.brokers:
                b.metadata.brokers[bid] = eps
        errors = [[d["topic"], d["partition"], b.replicas.apply(d)] for d in body.get("partitions", ())]
        return encode_private_response(corr, {"error_code": 0, "partitions": errors})
    if api == UPDATE_METADATA:
        b.metadata.apply_update(body)
        return encode_private_response(corr, {"error_code": 0})
    if api == STOP_REPLICA:
        for t, p in body.get("partitions", ()):
            b.replicas.stop(str(t), int(p), bool(body.get("delete")))
        if body.get("delete"):
            for t, p in body.get("partitions", ()):
                b.metadata.topics.get(str(t), {}).pop(int(p), None)
        return encode_private_response(corr, {"error_code": 0})
    return encode_private_response(corr, {"error_code": 35})


async def elect_leaders(b: ControllerHost, ctx: Ctx, req: Any) -> Any:
    R = ElectLeadersResponse.ReplicaElectionResult
    P = R.PartitionResult
    parts = None if req.topic_partitions is None else [
        (tp.topic, p) for tp in req.topic_partitions for p in tp.partitions]
    ctl = b.controller
    top = {"error_code": NOT_CONTROLLER} if ctx.head.api_version >= 1 else {}
    if ctl is None or not ctl.active:
        return build_response(ctx.head, throttle_time_ms=0, replica_election_results=[], **top)
    fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
    ctl.post("elect_leaders", parts, fut)
    res = await fut
    by_topic: dict[str, list[Any]] = {}
    for t, p, e in res.get("results", ()):
        by_topic.setdefault(t, []).append(P(partition_id=p, error_code=e, error_message=None))
    top = {"error_code": res.get("error_code", 0)} if ctx.head.api_version >= 1 else {}
    return build_response(ctx.head, throttle_time_ms=0, **top,
                          replica_election_results=[R(topic=t, partition_result=ps) for t, ps in by_topic.items()])


def _controller_endpoint(b: ControllerHost) -> tuple[int, str, int] | None:
    client = b.zk_client()
    assert client is not None
    try:
        data, _ = client.get(CONTROLLER_PATH)
        cid = ControllerRegistration.decode(data).broker_id
        reg = BrokerRegistration.decode(cid, client.get(broker_path(cid))[0])
    except (NoNodeError, ValueError):
        return None
    ep = reg.endpoint(b.config.inter_broker_listener()) or (reg.endpoints[0] if reg.endpoints else None)
    return (cid, ep.host, ep.port) if ep else None


async def controlled_shutdown(b: ControllerHost) -> bool:
    """Ask the controller to move this broker's leaderships; True once it leads nothing replicated."""
    cfg = b.config
    if b.zk_client() is None or not cfg.controlled_shutdown_enable:
        return False
    if bugs.SHUTDOWN_WITHOUT_MOVING_LEADERS in cfg.reference_bugs:
        log.warning("broker %d skips its controlled shutdown and deregisters still leading its partitions "
                    "[bug %s]", b.broker_id, bugs.SHUTDOWN_WITHOUT_MOVING_LEADERS)
        return False
    t0 = asyncio.get_running_loop().time()
    for attempt in range(cfg.controlled_shutdown_max_retries + 1):
        target = await asyncio.to_thread(_controller_endpoint, b)
        if target is not None:
            conn = PeerConnection(target[1], target[2], f"broker-{b.broker_id}-shutdown",
                                  cfg.controller_socket_timeout_ms / 1000)
            try:
                resp = await conn.private(CONTROLLED_SHUTDOWN, {"broker_id": b.broker_id, "broker_epoch": -1})
            except PeerError as exc:
                resp = {"error_code": -1, "why": str(exc)}
            finally:
                conn.close()
            if resp.get("error_code") == 0 and not resp.get("remaining") and await _wait_not_leading(b, 5.0):
                log.warning("controlled shutdown of broker %d done in %.2f s (attempt %d)", b.broker_id,
                            asyncio.get_running_loop().time() - t0, attempt + 1)
                return True
            log.warning("controlled shutdown attempt %d of broker %d: %s", attempt + 1, b.broker_id, resp)
        await asyncio.sleep(min(cfg.controlled_shutdown_retry_backoff_ms / 1000, 5.0))
    log.warning("controlled shutdown of broker %d gave up; stopping anyway", b.broker_id)
    return False


async def _wait_not_leading(b: ControllerHost, timeout_s: float) -> bool:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        led = [tp for tp, p in b.replicas.partitions.items() if p.leader == b.broker_id and len(p.replicas) > 1]
        if not led:
            return True
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.05)
