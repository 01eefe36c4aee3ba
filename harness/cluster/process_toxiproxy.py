"""The process backend's one Toxiproxy: a real `toxiproxy-server` from `TOXIPROXY_BIN`, or the
embedded server as a subprocess (`python -m harness.toxiproxy.server --port 0`: its own process,
so proxy traffic never competes with the harness for the GIL). Started in its own process group,
recorded for leftover cleanup; readiness is the API answering `GET /version`.

Also `ProcessLink`, the `Link` the cluster hands out: one proxy by name, driven through the typed
client `harness.toxiproxy.client.ToxiproxyClient` (usable with any Toxiproxy 2.x API).
"""

from __future__ import annotations

import json
import os
import re
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

import harness
from harness.cluster.leftovers import LeftoverRegistry
from harness.cluster.ports import allocate_ports
from harness.cluster.process_node import ManagedProcess
from harness.errors import BackendError, ConfigError
from harness.toxiproxy.client import ProxyInfo, ProxySpec, ToxiproxyClient
from harness.waiting import wait_until

_LISTENING = re.compile(r"toxiproxy listening on http://(?P<host>[^\s:]+):(?P<port>\d+)")


class ProcessLink:
    """`harness.cluster.base.Link` for one proxy of the process backend's Toxiproxy."""

    def __init__(self, name: str, client: ToxiproxyClient) -> None:
        self.name = name
        self._client = client

    def __repr__(self) -> str:
        return f"ProcessLink({self.name!r})"

    def disable(self) -> None:
        """Cut the link: the proxy closes its listener and every connection through it."""
        self._client.disable(self.name)

    def enable(self) -> None:
        self._client.enable(self.name)

    def add_toxic(
        self, kind: str, attributes: Mapping[str, float | int], *, stream: str = "downstream",
        toxicity: float = 1.0, name: str | None = None,
    ) -> str:
        """Add a toxic (Toxiproxy's type and attribute names); returns the toxic's name."""
        ints: dict[str, int] = {}
        for key, value in attributes.items():
            if not float(value).is_integer():
                raise ConfigError(f"link {self.name}: toxic {kind} attribute {key}={value!r} must be a whole "
                                  "number (Toxiproxy attributes are integers: ms, KB/s, bytes)")
            ints[key] = int(value)
        info = self._client.add_toxic(self.name, kind, ints, name=name, stream=stream, toxicity=toxicity)
        return info.name

    def remove_toxic(self, name: str) -> None:
        self._client.remove_toxic(self.name, name)


class ToxiproxyProcess:
    """The Toxiproxy server process and a client on its API."""

    def __init__(self, directory: Path, registry: LeftoverRegistry, host: str = "127.0.0.1",
                 *, binary: str | None = None, seed: int | None = None) -> None:
        self.directory = directory
        self.host = host
        self.binary = binary
        self.port = 0
        directory.mkdir(parents=True, exist_ok=True)
        if binary:
            self.port = allocate_ports(1, host)[0]
            argv = [binary, "-host", host, "-port", str(self.port)]
        else:
            argv = [sys.executable, "-m", "harness.toxiproxy.server", "--host", host, "--port", "0"]
            if seed is not None:
                argv += ["--seed", str(seed)]
        root = str(Path(harness.__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (":" + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.process = ManagedProcess("toxiproxy", argv, cwd=directory, log_path=directory / "toxiproxy.log",
                                      registry=registry, env=env)
        self._client: ToxiproxyClient | None = None
        self.version: str | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def client(self) -> ToxiproxyClient:
        if self._client is None:
            raise BackendError("toxiproxy is not started")
        return self._client

    def create_proxies(self, specs: list[ProxySpec]) -> dict[str, ProxyInfo]:
        """Create every proxy in one `POST /populate`; returns them by name with their bound addresses."""
        created = {p.name: p for p in self.client.populate(specs)}
        missing = sorted({s.name for s in specs} - set(created))
        if missing:
            raise BackendError(f"toxiproxy at {self.url} did not create proxies {missing}")
        return created

    def link(self, name: str) -> ProcessLink:
        return ProcessLink(name, self.client)

    def start(self, timeout_s: float) -> None:
        """Start the server and wait until `GET /version` answers."""
        log_offset = self.process.log_path.stat().st_size if self.process.log_path.exists() else 0
        self.process.start()
        last = "no answer yet"

        def answers() -> bool:
            nonlocal last
            if not self.process.is_running():
                raise BackendError(f"toxiproxy exited while starting ({self.process.exit_description()}); "
                                   f"log {self.process.log_path} ends with:\n{self.process.tail()}")
            if not self.binary and self.port == 0:
                self.port = self._port_from_log(log_offset)
            if not self.port:
                last = f"no port in {self.process.log_path} yet"
                return False
            try:
                with urllib.request.urlopen(f"{self.url}/version", timeout=1.0) as resp:
                    self.version = _version_text(resp.read())
                return True
            except (urllib.error.URLError, OSError) as exc:
                last = f"{exc} (from {self.url})"
                return False

        wait_until(f"toxiproxy API on {self.host} to answer GET /version", answers, timeout_s, poll_s=0.05,
                   last_seen=lambda _: f"{last}; log {self.process.log_path} ends with:\n{self.process.tail()}",
                   hint="TOXIPROXY_BIN must be a toxiproxy-server 2.x binary; unset it to use the embedded one")
        self._client = ToxiproxyClient(self.url)

    def _port_from_log(self, offset: int) -> int:
        try:
            with open(self.process.log_path, "rb") as fh:
                fh.seek(offset)
                text = fh.read().decode("utf-8", "replace")
        except OSError:
            return 0
        m = _LISTENING.search(text)
        return int(m.group("port")) if m else 0

    def describe(self) -> dict[str, object]:
        return {"kind": "binary" if self.binary else "embedded-subprocess", "binary": self.binary,
                "url": self.url, "version": self.version, "pid": self.process.pid}

    def close(self) -> None:
        """SIGTERM (the embedded server closes every proxy), SIGKILL after 5 s."""
        client, self._client = self._client, None
        if client is not None:
            client.close()
        self.process.terminate(5.0)


def _version_text(body: bytes) -> str:
    """`GET /version`: JSON `{"version": …}` since Toxiproxy 2.6, plain text before."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text
    return str(data.get("version", text)) if isinstance(data, dict) else text
