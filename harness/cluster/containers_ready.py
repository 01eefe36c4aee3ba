"""Readiness of the containers backend's nodes, seen from the host (as the process backend sees its own):

- Toxiproxy: its API answers `GET /version` on the published port.
- ZooKeeper member: `srvr` reports a mode on the published client port (when a majority runs), else
  the port accepts connections.
- Broker: registered in `/brokers/ids/<k>` by this incarnation (kazoo through the published ZooKeeper
  ports) AND answering Metadata through its own `client->k` proxy, listed in what it answers.
  Restart after a kill first waits for the previous incarnation's ephemeral registration to expire.

A timeout names the node, the container, what was last seen, the container's last log lines and a hint.
"""

from __future__ import annotations

import json
import logging
import socket
import time
import urllib.error
import urllib.request
from typing import Any, cast

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.handlers.threading import KazooTimeoutError

from harness.cluster.containers_engine import NodeContainer
from harness.errors import BackendError, HarnessTimeout
from harness.zk.fourletter import server_mode

_QUIET = logging.getLogger("harness.cluster.containers.clients")
_QUIET.setLevel(logging.CRITICAL)
BROKER_HINT = ("see the container log; check zookeeper.connect (via proxies k->zk* on the toxiproxy container), "
               "the listeners in server.properties and the published client->k port")


def _exited(node: NodeContainer, what: str) -> BackendError:
    return BackendError(f"{node.spec.node} (container {node.spec.name}) exited while {what} "
                        f"(exit code {node.exit_code()}); its log ends with:\n{node.tail()}")


def wait_toxiproxy(node: NodeContainer, url: str, deadline: float) -> str:
    """Wait until the API answers; returns the version it reports."""
    timeout = max(0.0, deadline - time.monotonic())
    last: object = "no answer yet"
    while True:
        if not node.is_running():
            raise _exited(node, "starting")
        try:
            with urllib.request.urlopen(f"{url}/version", timeout=1.0) as resp:
                text = resp.read().decode("utf-8", "replace").strip()
            try:
                data = json.loads(text)
                return str(data.get("version", text)) if isinstance(data, dict) else text
            except ValueError:
                return text
        except (urllib.error.URLError, OSError) as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise HarnessTimeout(f"toxiproxy (container {node.spec.name}) API at {url} to answer GET /version",
                                 timeout, last_seen=f"{last}; log ends with:\n{node.tail()}",
                                 hint="the toxiproxy image must serve the Toxiproxy 2.x API on port 8474")
        time.sleep(0.1)


def wait_zookeeper(node: NodeContainer, host: str, port: int, deadline: float, *, quorum: bool) -> None:
    """With `quorum`: until `srvr` reports a mode; otherwise until the client port accepts connections."""
    timeout = max(0.0, deadline - time.monotonic())
    last: object = "no answer yet"
    while True:
        if not node.is_running():
            raise _exited(node, "starting")
        try:
            if quorum:
                mode = server_mode(host, port, timeout_s=1.0)
                if mode:
                    return
                last = "srvr answered without a mode (no quorum yet?)"
            else:
                with socket.create_connection((host, port), timeout=1.0):
                    return
        except OSError as exc:
            last = exc
        if time.monotonic() >= deadline:
            raise HarnessTimeout(
                f"{node.spec.node} (container {node.spec.name}) to serve on {host}:{port}", timeout,
                last_seen=f"{last}; log ends with:\n{node.tail()}",
                hint="check the member's log; an ensemble needs a majority of members running")
        time.sleep(0.1)


class BrokerReadiness:
    """The host's view of broker registrations and Metadata answers."""

    def __init__(self, zookeeper_connect: str) -> None:
        self.zookeeper_connect = zookeeper_connect
        self._zk: KazooClient | None = None
        self._czxid: dict[int, int | None] = {}

    def zookeeper(self) -> KazooClient:
        if self._zk is None:
            zk = KazooClient(hosts=self.zookeeper_connect, timeout=10.0, logger=_QUIET)
            try:
                zk.start(timeout=15.0)
            except KazooTimeoutError as exc:
                zk.close()
                raise BackendError(f"cannot connect to ZooKeeper at {self.zookeeper_connect} (published ports) "
                                   "to watch broker registrations") from exc
            self._zk = zk
        return self._zk

    def registration(self, broker_id: int) -> int | None:
        """czxid of `/brokers/ids/<id>` (None when absent). Raises KazooException when ZooKeeper is away."""
        stat = self.zookeeper().exists(f"/brokers/ids/{broker_id}")
        return None if stat is None else int(stat.czxid)

    def controller(self) -> int | None:
        """The broker id in `/controller`, None when absent."""
        data, _ = self.zookeeper().get("/controller") if self.zookeeper().exists("/controller") else (b"", None)
        if not data:
            return None
        return int(json.loads(data.decode())["brokerid"])

    def forget(self, broker_id: int) -> None:
        self._czxid[broker_id] = None

    def wait_stale_gone(self, broker_id: int, deadline: float) -> None:
        """Before restarting a killed broker: wait for its old registration to expire (at most the session
        timeout); if it never goes, readiness then requires a newer registration."""
        last: int | None = None
        while time.monotonic() < deadline:
            try:
                last = self.registration(broker_id)
            except KazooException:
                break
            if last is None:
                break
            time.sleep(0.1)
        self._czxid[broker_id] = last

    def wait_ready(self, node: NodeContainer, broker_id: int, proxy: str, deadline: float) -> None:
        timeout = max(0.0, deadline - time.monotonic())
        admin: AdminClient | None = None
        last = "not registered in /brokers/ids yet"
        registered = False
        while True:
            if not node.is_running():
                raise BackendError(f"broker:{broker_id} (container {node.spec.name}) exited while starting (exit "
                                   f"code {node.exit_code()}); its log ends with:\n{node.tail()}\nhint: {BROKER_HINT}")
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
                    "reconnect.backoff.max.ms": 500, "logger": _QUIET}))
                try:
                    md = admin.list_topics(timeout=1.0)
                    if (md.orig_broker_name or "").startswith(proxy) and broker_id in md.brokers:
                        return
                    last = f"Metadata answered by {md.orig_broker_name} listing brokers {sorted(md.brokers)}"
                except KafkaException as exc:
                    last = f"registered; Metadata via {proxy} failed: {exc}"
            if time.monotonic() >= deadline:
                raise HarnessTimeout(
                    f"broker:{broker_id} (container {node.spec.name}) to register in /brokers/ids and answer "
                    f"Metadata via proxy client->{broker_id} ({proxy})", timeout,
                    last_seen=f"{last}; container log ends with:\n{node.tail()}", hint=BROKER_HINT)
            time.sleep(0.1)

    def close(self) -> None:
        zk, self._zk = self._zk, None
        if zk is not None:
            try:
                zk.stop()
            finally:
                zk.close()
