"""Broker readiness seen from the host, shared by the process and containers backends.

A broker is ready when THIS incarnation is registered in `/brokers/ids/<k>` (its registration's
czxid differs from the one a killed predecessor left) AND it answers Metadata through its own
`client->k` proxy, listing itself. Restarting a killed broker first waits for the predecessor's
ephemeral registration to expire (at most one session timeout), as Kafka refuses to start while
it exists. Timeouts name the node, what was seen last, the node's last log lines and a hint.

KRaft brokers (`zookeeper_connect` empty) have no ZooKeeper registration: `wait_ready` then waits for the
Metadata answer alone, which in KRaft lists only registered, unfenced brokers.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, cast

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from harness.cluster.client_security import PLAINTEXT, ClientSecurity
from harness.errors import BackendError
from harness.waiting import poll_until, wait_until

_QUIET = logging.getLogger("harness.cluster.readiness.clients")
"""Where the readiness probes' kazoo and librdkafka clients log: nowhere (a broker that is still starting
refuses connections; the timeout message says what was seen last). Never stderr, not even the root logger."""
_QUIET.setLevel(logging.CRITICAL)
_QUIET.propagate = False
_QUIET.addHandler(logging.NullHandler())


class BrokerReadiness:
    """The host's view of broker registrations and Metadata answers (one kazoo client, made lazily)."""

    def __init__(self, zookeeper_connect: str, *, hint: str, security: ClientSecurity = PLAINTEXT) -> None:
        self.zookeeper_connect = zookeeper_connect
        self.hint = hint
        self.security = security
        """How the Metadata probe connects (the admin's access on a secured cluster)."""
        self._zk: KazooClient | None = None
        self._czxid: dict[int, int | None] = {}

    def zookeeper(self) -> KazooClient:
        if self._zk is None:
            zk = KazooClient(hosts=self.zookeeper_connect, timeout=10.0, logger=_QUIET)
            try:
                zk.start(timeout=15.0)
            except KazooTimeoutError as exc:
                zk.close()
                raise BackendError(f"cannot connect to ZooKeeper at {self.zookeeper_connect} to watch broker "
                                   "registrations") from exc
            self._zk = zk
        return self._zk

    def registration(self, broker_id: int) -> int | None:
        """czxid of `/brokers/ids/<id>` (None when absent). Raises KazooException when ZooKeeper is away."""
        stat = self.zookeeper().exists(f"/brokers/ids/{broker_id}")
        return None if stat is None else int(stat.czxid)

    def controller(self) -> int | None:
        """The broker id in `/controller`, None when absent."""
        zk = self.zookeeper()
        data, _ = zk.get("/controller") if zk.exists("/controller") else (b"", None)
        return int(json.loads(data.decode())["brokerid"]) if data else None

    def forget(self, broker_id: int) -> None:
        """A fresh start: any registration counts as this incarnation's."""
        self._czxid[broker_id] = None

    def wait_stale_gone(self, broker_id: int, deadline: float) -> None:
        """Before restarting a killed broker: wait for its old registration to expire; if it never goes,
        readiness then requires a newer one."""
        last: int | None = None

        def gone() -> bool:
            nonlocal last
            try:
                last = self.registration(broker_id)
            except KazooException:
                return True
            return last is None

        poll_until(gone, deadline=deadline, poll_s=0.1)
        self._czxid[broker_id] = last

    def wait_ready(self, broker_id: int, proxy: str, deadline: float, *, who: str,
                   alive: Callable[[], bool], exited: Callable[[], str], tail: Callable[[], str]) -> None:
        """Wait until broker `broker_id` is registered by this incarnation and answers Metadata via `proxy`.

        `who` names the node in messages ("broker:1 (pid 42)"), `alive()` says whether it still runs,
        `exited()` describes how it ended, and `tail()` returns the end of its log."""
        admin: AdminClient | None = None
        kraft = not self.zookeeper_connect
        last = "not answering Metadata yet" if kraft else "not registered in /brokers/ids yet"
        registered = kraft

        def ready() -> bool:
            nonlocal admin, last, registered
            if not alive():
                raise BackendError(f"{who} exited while starting ({exited()}); its log ends with:\n{tail()}\n"
                                   f"hint: {self.hint}")
            if not registered:
                try:
                    czxid = self.registration(broker_id)
                    registered = czxid is not None and czxid != self._czxid.get(broker_id)
                    if czxid is not None and not registered:
                        last = "/brokers/ids still holds the previous incarnation's registration"
                except KazooException as exc:
                    last = f"ZooKeeper unavailable: {type(exc).__name__}"
            if registered:
                admin = admin or AdminClient(cast(dict[str, Any], {
                    "bootstrap.servers": proxy, "socket.timeout.ms": 5000, "reconnect.backoff.ms": 100,
                    "reconnect.backoff.max.ms": 500, "logger": _QUIET, **self.security.librdkafka()}))
                try:
                    md = admin.list_topics(timeout=1.0)
                    answered = (md.orig_broker_name or "").rpartition("://")[2]  # sasl_ssl://host:port/id
                    if answered.startswith(proxy) and broker_id in md.brokers:
                        return True
                    last = f"Metadata answered by {md.orig_broker_name} listing brokers {sorted(md.brokers)}"
                    # Once librdkafka knows the cluster it may ask any broker; a new client asks its
                    # bootstrap address (this proxy) first.
                    admin = None
                except KafkaException as exc:
                    last = f"registered; Metadata via {proxy} failed: {exc}"
                finally:
                    if admin is not None:
                        admin.poll(0)  # serves librdkafka's log queue (to _QUIET): it does not grow while we wait
            return False

        registration = "be unfenced" if kraft else "register in /brokers/ids"
        wait_until(f"{who} to {registration} and answer Metadata via proxy client->{broker_id} ({proxy})", ready,
                   deadline=deadline, last_seen=lambda _: f"{last}; its log ends with:\n{tail()}", hint=self.hint)

    def close(self) -> None:
        zk, self._zk = self._zk, None
        if zk is not None:
            try:
                zk.stop()
            finally:
                zk.close()
