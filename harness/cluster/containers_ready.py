"""Readiness of the containers backend's nodes, seen from the host (as the process backend sees its own):

- Toxiproxy: its API answers `GET /version` on the published port.
- ZooKeeper member: `srvr` reports a mode on the published client port (when a majority runs), else
  the port accepts connections.
- Broker: `harness.cluster.readiness.BrokerReadiness` (shared with the process backend).

A timeout names the node, the container, what was last seen, the container's last log lines and a hint.
"""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

from harness.cluster.containers_engine import NodeContainer
from harness.errors import BackendError, HarnessTimeout
from harness.zk.fourletter import server_mode

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
