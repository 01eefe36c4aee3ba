"""The process backend's one Toxiproxy: a real `toxiproxy-server` from `TOXIPROXY_BIN`, or the
embedded server as a subprocess (`python -m harness.toxiproxy.server --port 0`: its own process,
so proxy traffic never competes with the harness for the GIL). Started in its own process group,
recorded for leftover cleanup; readiness is the API answering `GET /version`.

Also the `Link` the cluster hands out: one proxy by name, driven through the typed client.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path

import harness
from harness.cluster.leftovers import LeftoverRegistry
from harness.cluster.process_node import ManagedProcess
from harness.cluster.render import allocate_ports
from harness.errors import BackendError, HarnessTimeout

_LISTENING = re.compile(r"toxiproxy listening on http://(?P<host>[^\s:]+):(?P<port>\d+)")


class ToxiproxyClient:
    """Minimal Toxiproxy 2.x HTTP API calls the process backend needs (interim, see report)."""

    def __init__(self, host: str, port: int, timeout_s: float = 10.0) -> None:
        self.url = f"http://{host}:{port}"
        self.timeout_s = timeout_s

    def _call(self, method: str, path: str, body: object = None) -> object:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout_s) as resp:
                raw = resp.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace").strip()
            raise BackendError(f"toxiproxy {method} {path} failed: {exc.code} {detail}") from exc
        except OSError as exc:
            raise BackendError(f"toxiproxy {method} {path} at {self.url} failed: {exc}") from exc
        return json.loads(raw) if raw.strip() else None

    def create(self, name: str, listen: str, upstream: str) -> None:
        self._call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream, "enabled": True})

    def enable(self, name: str) -> None:
        self._call("POST", f"/proxies/{name}", {"enabled": True})

    def disable(self, name: str) -> None:
        self._call("POST", f"/proxies/{name}", {"enabled": False})

    def add_toxic(self, proxy: str, kind: str, attributes: Mapping[str, float | int], *, stream: str,
                  toxicity: float, toxic_name: str | None) -> str:
        body = {"type": kind, "stream": stream, "toxicity": toxicity, "attributes": dict(attributes)}
        if toxic_name:
            body["name"] = toxic_name
        reply = self._call("POST", f"/proxies/{proxy}/toxics", body)
        return str(reply["name"]) if isinstance(reply, dict) else (toxic_name or f"{kind}_{stream}")

    def remove_toxic(self, proxy: str, toxic_name: str) -> None:
        self._call("DELETE", f"/proxies/{proxy}/toxics/{toxic_name}")


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
        return self._client.add_toxic(self.name, kind, attributes, stream=stream, toxicity=toxicity,
                                      toxic_name=name)

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

    def link(self, name: str) -> ProcessLink:
        return ProcessLink(name, self.client)

    def start(self, timeout_s: float) -> None:
        """Start the server and wait until `GET /version` answers."""
        log_offset = self.process.log_path.stat().st_size if self.process.log_path.exists() else 0
        self.process.start()
        deadline = time.monotonic() + timeout_s
        last: object = "no answer yet"
        while True:
            if not self.process.is_running():
                raise BackendError(f"toxiproxy exited while starting ({self.process.exit_description()}); "
                                   f"log {self.process.log_path} ends with:\n{self.process.tail()}")
            if not self.binary and self.port == 0:
                self.port = self._port_from_log(log_offset)
            if self.port:
                try:
                    with urllib.request.urlopen(f"{self.url}/version", timeout=1.0) as resp:
                        self.version = _version_text(resp.read())
                    break
                except (urllib.error.URLError, OSError) as exc:
                    last = exc
            if time.monotonic() >= deadline:
                raise HarnessTimeout(
                    f"toxiproxy API at {self.url if self.port else self.host} to answer GET /version", timeout_s,
                    last_seen=f"{last}; log {self.process.log_path} ends with:\n{self.process.tail()}",
                    hint="TOXIPROXY_BIN must be a toxiproxy-server 2.x binary; unset it to use the embedded one")
            time.sleep(0.05)
        self._client = ToxiproxyClient(self.host, self.port)

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
        self._client = None
        self.process.terminate(5.0)


def _version_text(body: bytes) -> str:
    """`GET /version`: JSON `{"version": …}` since Toxiproxy 2.6, plain text before."""
    text = body.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text
    return str(data.get("version", text)) if isinstance(data, dict) else text
