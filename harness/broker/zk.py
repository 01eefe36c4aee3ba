"""ZooKeeper registration of the reference broker (the controller, in `controller.py`, shares its session).

Owns the kazoo session, the persistent skeleton a ZooKeeper-mode broker creates at start-up
(`harness.zk.znodes.ensure_kafka_paths`), the cluster id at `/cluster/id` (read, or created
once), and the EPHEMERAL `/brokers/ids/<id>` with Kafka's version-5 JSON
(`harness.zk.znodes.BrokerRegistration`). A chroot in `zookeeper.connect` is created if missing,
as Kafka does. After a kill -9 the previous session's ephemeral node lives until that session
expires: where Kafka would refuse to start (NodeExists), this broker waits for it to vanish, up to
twice `zookeeper.session.timeout.ms`. When the session is lost the node is registered again on
the next session.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from types import TracebackType

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import NodeExistsError, NoNodeError

from harness.broker.config import BrokerConfig, Listener
from harness.errors import BackendError, HarnessTimeout
from harness.zk.paths import CLUSTER_ID_PATH, broker_path
from harness.zk.znodes import BrokerRegistration, Endpoint, decode_cluster_id, encode_cluster_id, ensure_kafka_paths

log = logging.getLogger(__name__)


def split_chroot(connect: str) -> tuple[str, str]:
    """`h1:p1,h2:p2/chroot` -> ("h1:p1,h2:p2", "/chroot") ("" when none)."""
    slash = connect.find("/")
    if slash < 0:
        return connect, ""
    return connect[:slash], connect[slash:].rstrip("/")


class ZkRegistration:
    """The broker's ZooKeeper session and its `/brokers/ids/<id>` node; a context manager."""

    def __init__(self, config: BrokerConfig, advertised: tuple[Listener, ...] | None = None) -> None:
        self.config = config
        self.cluster_id = ""
        self._client: KazooClient | None = None
        self._closing = False
        self._lock = threading.Lock()
        cfg = config
        self.registration = BrokerRegistration(
            broker_id=cfg.broker_id,
            endpoints=tuple(Endpoint(lst.name, lst.host, lst.port, cfg.security_protocol(lst.name))
                            for lst in (advertised or cfg.advertised())),
        )

    @property
    def client(self) -> KazooClient | None:
        """The live kazoo session (None before start / after stop)."""
        return self._client

    def __enter__(self) -> ZkRegistration:
        self.start()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        hosts, chroot = split_chroot(self.config.zookeeper_connect)
        timeout_s = self.config.zookeeper_connection_timeout_ms / 1000
        if chroot:
            boot = KazooClient(hosts=hosts, timeout=timeout_s)
            try:
                boot.start(timeout=timeout_s)
                boot.ensure_path(chroot)
            finally:
                boot.stop()
                boot.close()
        client = KazooClient(hosts=hosts + chroot, timeout=self.config.zookeeper_session_timeout_ms / 1000)
        try:
            client.start(timeout=timeout_s)
        except Exception as exc:
            client.close()
            raise BackendError(f"broker {self.config.broker_id}: cannot reach ZooKeeper at "
                               f"{self.config.zookeeper_connect}: {exc}") from exc
        self._client = client
        ensure_kafka_paths(client)
        self.cluster_id = self._cluster_id(client)
        self._register(wait_s=2 * self.config.zookeeper_session_timeout_ms / 1000)
        client.add_listener(self._on_state)

    def _cluster_id(self, client: KazooClient) -> str:
        try:
            data, _ = client.get(CLUSTER_ID_PATH)
            return str(decode_cluster_id(data))
        except Exception:  # NoNode: first broker of the cluster creates it
            new_id = uuid.uuid4().hex[:22]
            try:
                client.create(CLUSTER_ID_PATH, encode_cluster_id(new_id), makepath=True)
                return new_id
            except NodeExistsError:
                data, _ = client.get(CLUSTER_ID_PATH)
                return str(decode_cluster_id(data))

    def _register(self, wait_s: float) -> None:
        client = self._client
        if client is None:
            return
        path = broker_path(self.config.broker_id)
        deadline = time.monotonic() + wait_s
        last: object = None
        while not self._closing:
            with self._lock:
                try:
                    client.create(path, self.registration.encode(), ephemeral=True, makepath=True)
                    log.info("registered %s in ZooKeeper: %s", path, self.registration.encode().decode())
                    return
                except NodeExistsError:
                    try:
                        _, stat = client.get(path)
                    except NoNodeError:  # the old session expired just now: create again
                        continue
                    if stat.ephemeralOwner == client.client_id[0]:
                        return
                    last = f"{path} owned by session 0x{stat.ephemeralOwner:x}"
            if time.monotonic() > deadline:
                raise HarnessTimeout(f"{path} to be free for broker {self.config.broker_id}", wait_s, last,
                                     "another broker with this broker.id is alive, or its session has not "
                                     "expired yet")
            time.sleep(0.2)

    def _on_state(self, state: str) -> None:
        if state == KazooState.LOST and not self._closing:
            log.warning("ZooKeeper session lost; will register again on the next session")
        elif state == KazooState.CONNECTED and not self._closing and self._client is not None:
            self._client.handler.spawn(self._reregister)

    def _reregister(self) -> None:
        try:
            self._register(wait_s=2 * self.config.zookeeper_session_timeout_ms / 1000)
        except Exception as exc:
            log.error("re-registration in ZooKeeper failed: %s", exc)

    def stop(self) -> None:
        """Delete the registration (clean shutdown) and close the session."""
        self._closing = True
        client, self._client = self._client, None
        if client is None:
            return
        try:
            client.delete(broker_path(self.config.broker_id))
        except Exception as exc:
            log.info("deleting registration: %s", exc)
        finally:
            client.stop()
            client.close()
