"""A typed client for any Toxiproxy 2.x API (real binary, container, or the embedded server).

A thin wrapper over toxiproxy-python 0.1.1, which does the HTTP. That library keeps the API host/port
at class level (`toxiproxy.api.APIConsumer`), calls `requests` with no timeout, and maps only 400/404/409
to exceptions, so `ToxiproxyClient`:

- binds `APIConsumer.host/port` to its own server around every call, under one process-wide lock, and
  restores them afterwards: several clients for several servers can be used from several threads (calls
  are serialised; each takes about a millisecond on loopback);
- swaps `toxiproxy.api.requests` (under the same lock) for a shim that uses this client's keep-alive
  session and timeout, and raises for the statuses the library lets through silently (403, 405, 5xx);
- turns every failure into a `ToxiproxyClientError` (a `BackendError`, so a `HarnessError`) naming the
  server, operation, proxy and toxic.

Where 0.1.1 is incomplete or wrong for Toxiproxy 2.x, the wrapper goes through the library's own
transport (`APIConsumer.get/post`) instead, and says so at the method: `populate` (the library's
client-side populate compares `listen` with the server's resolved address, so `127.0.0.1:0` proxies are
always destroyed and re-created, cutting live connections; it also needs `listen` in every entry and
ignores `enabled`), `update_toxic` (missing), `get_proxy`/`proxies` (the library's Proxy objects drop
the `toxics` list), `version`/`running` (2.x answers JSON; the library probes with an untimed
connect). Proxy names are URL-quoted before the library pastes them into paths (it does not quote),
so names like `client->1` work. The library's 409 for toxics is `ProxyExists`; mapped by message here.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

import requests
import toxiproxy
import toxiproxy.api as _tp_api
from toxiproxy.exceptions import InvalidToxic, NotFound, ProxyExists
from toxiproxy.proxy import Proxy as _LibProxy

from harness.errors import BackendError
from harness.waiting import wait_until

_LOCK = threading.RLock()  # guards toxiproxy-python's class-level host/port and module-level `requests`


class ToxiproxyClientError(BackendError):
    """A Toxiproxy API call failed. Names the server, the operation, the proxy/toxic and the answer."""

    def __init__(self, url: str, operation: str, detail: str, *, proxy: str | None = None,
                 toxic: str | None = None, status: int | None = None) -> None:
        self.url, self.operation, self.detail = url, operation, detail
        self.proxy, self.toxic, self.status = proxy, toxic, status
        where = "".join([f" proxy {proxy!r}" if proxy else "", f" toxic {toxic!r}" if toxic else ""])
        code = f"HTTP {status}: " if status is not None else ""
        super().__init__(f"toxiproxy {url}: {operation}{where} failed: {code}{detail}")


class ToxiproxyUnavailableError(ToxiproxyClientError):
    """The Toxiproxy API did not answer (not running, wrong address, timed out)."""


class ProxyNotFoundError(ToxiproxyClientError):
    """404 proxy not found."""


class ProxyExistsError(ToxiproxyClientError):
    """409 proxy already exists."""


class ToxicNotFoundError(ToxiproxyClientError):
    """404 toxic not found."""


class ToxicExistsError(ToxiproxyClientError):
    """409 toxic already exists."""


class InvalidRequestError(ToxiproxyClientError):
    """400: bad body, missing field, invalid stream, toxic type or attributes."""


@dataclass(frozen=True, slots=True)
class ToxicInfo:
    """A toxic as the API reports it."""

    name: str
    type: str
    stream: str
    toxicity: float
    attributes: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ToxicInfo:
        return cls(str(data["name"]), str(data["type"]), str(data.get("stream", "downstream")),
                   float(data.get("toxicity", 1.0)), dict(data.get("attributes") or {}))


@dataclass(frozen=True, slots=True)
class ProxyInfo:
    """A proxy as the API reports it; `listen` is the bound address (real port even if 0 was asked)."""

    name: str
    listen: str
    upstream: str
    enabled: bool
    toxics: tuple[ToxicInfo, ...] = ()

    @property
    def listen_host(self) -> str:
        return self.listen.rpartition(":")[0].strip("[]")

    @property
    def listen_port(self) -> int:
        return int(self.listen.rpartition(":")[2])

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ProxyInfo:
        toxics = tuple(ToxicInfo.from_json(t) for t in data.get("toxics") or ())
        return cls(str(data["name"]), str(data["listen"]), str(data["upstream"]), bool(data["enabled"]), toxics)


@dataclass(frozen=True, slots=True)
class ProxySpec:
    """A proxy to create (`populate`)."""

    name: str
    upstream: str
    listen: str = "127.0.0.1:0"
    enabled: bool = True

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "upstream": self.upstream, "listen": self.listen, "enabled": self.enabled}


class _HttpStatusError(Exception):
    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(status)
        self.status, self.body = status, body


class _RequestsShim:
    """Stands in for the `requests` module inside toxiproxy.api: session, timeout, strict statuses."""

    def __init__(self, session: requests.Session, timeout_s: float) -> None:
        self._session, self._timeout_s = session, timeout_s

    def _check(self, response: requests.Response) -> requests.Response:
        if response.status_code >= 400 and response.status_code not in (400, 404, 409):
            raise _HttpStatusError(response.status_code, response.content)
        return response

    def get(self, url: str, **kwargs: Any) -> requests.Response:
        return self._check(self._session.get(url, timeout=self._timeout_s, **kwargs))

    def post(self, url: str, **kwargs: Any) -> requests.Response:
        return self._check(self._session.post(url, timeout=self._timeout_s, **kwargs))

    def delete(self, url: str, **kwargs: Any) -> requests.Response:
        return self._check(self._session.delete(url, timeout=self._timeout_s, **kwargs))


def _error_text(body: object) -> str:
    raw = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.strip()
    return str(data.get("error", raw)).strip() if isinstance(data, dict) else raw.strip()


def _q(name: str) -> str:
    return quote(name, safe="")


def _handle(proxy: str) -> _LibProxy:
    """A library Proxy object addressing `proxy` by (quoted) name, without listing all proxies."""
    return _LibProxy(name=_q(proxy), upstream="", enabled=True, listen="")


class ToxiproxyClient:
    """Typed calls against one Toxiproxy API, e.g. `ToxiproxyClient("http://127.0.0.1:8474")`."""

    def __init__(self, url: str = "http://127.0.0.1:8474", timeout_s: float = 10.0) -> None:
        parts = urlsplit(url if "//" in url else f"http://{url}")
        if not parts.hostname or not parts.port:
            raise ToxiproxyClientError(url, "parse API URL", "expected http://host:port")
        self.host: str = parts.hostname
        self.port: int = parts.port
        self.url = f"http://{self.host}:{self.port}"
        self.timeout_s = timeout_s
        self._session = requests.Session()
        self._shim = _RequestsShim(self._session, timeout_s)
        self._server = toxiproxy.Toxiproxy()

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> ToxiproxyClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing --
    @contextlib.contextmanager
    def _call(self, operation: str, proxy: str | None = None, toxic: str | None = None) -> Iterator[None]:
        api = _tp_api.APIConsumer
        with _LOCK:
            saved = (api.host, api.port, _tp_api.requests)
            api.host, api.port, _tp_api.requests = self.host, self.port, self._shim
            try:
                yield
            except ProxyExists as exc:
                text = _error_text(exc.args[0] if exc.args else "")
                kind = ToxicExistsError if "toxic" in text else ProxyExistsError
                raise kind(self.url, operation, text, proxy=proxy, toxic=toxic, status=409) from exc
            except NotFound as exc:
                text = _error_text(exc.args[0] if exc.args else "")
                missing = ToxicNotFoundError if "toxic" in text else ProxyNotFoundError
                raise missing(self.url, operation, text, proxy=proxy, toxic=toxic, status=404) from exc
            except InvalidToxic as exc:
                text = _error_text(exc.args[0] if exc.args else "")
                raise InvalidRequestError(self.url, operation, text, proxy=proxy, toxic=toxic,
                                          status=400) from exc
            except _HttpStatusError as exc:
                raise ToxiproxyClientError(self.url, operation, _error_text(exc.body), proxy=proxy,
                                           toxic=toxic, status=exc.status) from exc
            except requests.RequestException as exc:
                raise ToxiproxyUnavailableError(self.url, operation, f"{type(exc).__name__}: {exc}",
                                                proxy=proxy, toxic=toxic) from exc
            except (KeyError, TypeError, ValueError) as exc:
                raise ToxiproxyClientError(self.url, operation, f"unexpected answer: {exc!r}",
                                           proxy=proxy, toxic=toxic) from exc
            finally:
                api.host, api.port, _tp_api.requests = saved

    # -- server --
    def running(self) -> bool:
        """True if the API answers `/version` within the timeout."""
        try:
            self.version()
        except ToxiproxyUnavailableError:
            return False
        return True

    def version(self) -> str:
        """The server's version (2.x answers `{"version": ...}`, older ones plain text).

        Not the library's `version()`/`running()`: they probe with a socket connect that has no timeout.
        """
        with self._call("get version"):
            text = _tp_api.APIConsumer.get("/version").content.decode("utf-8", "replace").strip()
        try:
            data = json.loads(text)
        except ValueError:
            return text
        return str(data.get("version", text)) if isinstance(data, dict) else text

    def wait_ready(self, timeout_s: float = 10.0) -> str:
        """Poll until the API answers `/version`; returns the version or raises `HarnessTimeout`."""
        return wait_until(f"toxiproxy API at {self.url}", self.version, timeout_s, poll_s=0.05,
                          retry_on=(ToxiproxyUnavailableError,),
                          last_seen=lambda seen: seen.detail if isinstance(seen, ToxiproxyUnavailableError) else seen,
                          hint="is the server started and listening on that address?")

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        with self._call("reset"):
            self._server.reset()

    def populate(self, proxies: Sequence[ProxySpec | Mapping[str, Any]]) -> list[ProxyInfo]:
        """Create/replace proxies in one call (server-side POST /populate, not the library's populate)."""
        body = [p.to_json() if isinstance(p, ProxySpec) else dict(p) for p in proxies]
        with self._call("populate"):
            data = _tp_api.APIConsumer.post("/populate", json=body).json()
            return [ProxyInfo.from_json(p) for p in data["proxies"]]

    # -- proxies --
    def proxies(self) -> dict[str, ProxyInfo]:
        with self._call("list proxies"):
            data = _tp_api.APIConsumer.get("/proxies").json()
            return {name: ProxyInfo.from_json(p) for name, p in data.items()}

    def create_proxy(self, name: str, upstream: str, listen: str = "127.0.0.1:0",
                     enabled: bool = True) -> ProxyInfo:
        with self._call("create", proxy=name):
            p = self._server.create(upstream=upstream, name=name, listen=listen, enabled=enabled)
            return ProxyInfo(p.name, p.listen, p.upstream, bool(p.enabled), ())

    def get_proxy(self, name: str) -> ProxyInfo:
        with self._call("get", proxy=name):
            return ProxyInfo.from_json(_tp_api.APIConsumer.get(f"/proxies/{_q(name)}").json())

    def find_proxy(self, name: str) -> ProxyInfo | None:
        try:
            return self.get_proxy(name)
        except ProxyNotFoundError:
            return None

    def delete_proxy(self, name: str, missing_ok: bool = False) -> None:
        try:
            with self._call("delete", proxy=name):
                _handle(name).destroy()
        except ProxyNotFoundError:
            if not missing_ok:
                raise

    def destroy_all(self) -> None:
        with self._call("delete all proxies"):
            self._server.destroy_all()

    def enable(self, name: str) -> None:
        """Listen again (on the same address) and accept connections."""
        with self._call("enable", proxy=name):
            _handle(name).enable()

    def disable(self, name: str) -> None:
        """Stop listening and close every live connection of the proxy."""
        with self._call("disable", proxy=name):
            _handle(name).disable()

    # -- toxics --
    def toxics(self, proxy: str) -> list[ToxicInfo]:
        with self._call("list toxics", proxy=proxy):
            return [
                ToxicInfo(t.name, t.type, t.stream, float(t.toxicity), dict(t.attributes))
                for t in _handle(proxy).toxics().values()
            ]

    def get_toxic(self, proxy: str, toxic: str) -> ToxicInfo:
        with self._call("get toxic", proxy=proxy, toxic=toxic):
            data = _tp_api.APIConsumer.get(f"/proxies/{_q(proxy)}/toxics/{_q(toxic)}").json()
            return ToxicInfo.from_json(data)

    def add_toxic(self, proxy: str, type: str, attributes: Mapping[str, int] | None = None, *,
                  name: str | None = None, stream: str = "downstream", toxicity: float = 1.0) -> ToxicInfo:
        """Add a toxic (default name `<type>_<stream>`); returns it as the server now reports it."""
        toxic_name = name or f"{type}_{stream}"
        kwargs: dict[str, Any] = {"type": type, "stream": stream, "toxicity": toxicity, "name": toxic_name,
                                  "attributes": dict(attributes or {})}
        with self._call(f"add {type} toxic", proxy=proxy, toxic=toxic_name):
            _handle(proxy).add_toxic(**kwargs)
        return self.get_toxic(proxy, toxic_name)

    def update_toxic(self, proxy: str, toxic: str, attributes: Mapping[str, int] | None = None,
                     toxicity: float | None = None) -> ToxicInfo:
        """Change attributes (partially) and/or toxicity; POST update (accepted by every 2.x)."""
        body: dict[str, Any] = {}
        if attributes is not None:
            body["attributes"] = dict(attributes)
        if toxicity is not None:
            body["toxicity"] = toxicity
        with self._call("update toxic", proxy=proxy, toxic=toxic):
            path = f"/proxies/{_q(proxy)}/toxics/{_q(toxic)}"
            return ToxicInfo.from_json(_tp_api.APIConsumer.post(path, json=body).json())

    def remove_toxic(self, proxy: str, toxic: str, missing_ok: bool = False) -> None:
        try:
            with self._call("remove toxic", proxy=proxy, toxic=toxic):
                _handle(proxy).destroy_toxic(_q(toxic))
        except ToxicNotFoundError:
            if not missing_ok:
                raise
