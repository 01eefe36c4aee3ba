"""The Toxiproxy 2.x HTTP API of the embedded server: routes, handlers, JSON shapes, status codes.

Mirrors Toxiproxy's api.go: `GET /version`, `GET/POST /proxies`, `POST /populate`, `POST /reset`,
`GET/POST/PATCH/DELETE /proxies/{name}` (POST and PATCH both update), `GET/POST /proxies/{name}/toxics`,
`GET/POST/PATCH/DELETE /proxies/{name}/toxics/{toxic}`. Status codes as Toxiproxy: 201 proxy create
and populate, 200 toxic create (Toxiproxy's own client expects 200 there), 204 delete and reset,
400 bad body/stream/type/attributes, 403 browser user agents, 404 missing, 405 wrong method,
409 exists, 500 when a listen address cannot be bound. Errors are `{"error": msg, "status": code}`
sent as Toxiproxy sends them, through Go's `http.Error`: `Content-Type: text/plain; charset=utf-8` and
`X-Content-Type-Options: nosniff`, body JSON plus a newline; except `POST /populate`, whose errors are
`application/json` with a `"proxies"` member too (null, or the proxies created before the failure).
Every mutation runs under one asyncio lock, so requests are applied one at a time.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from harness.toxiproxy.http import Request, Response
from harness.toxiproxy.proxy import Proxy, split_hostport
from harness.toxiproxy.toxics import (
    ERR_TOXIC_EXISTS,
    ERR_TOXIC_NOT_FOUND,
    ApiError,
    bad_body,
    parse_new_toxic,
    parse_toxic_update,
)

VERSION = "2.12.0+kafka-chaos-embedded"

ERR_PROXY_NOT_FOUND = "proxy not found"
ERR_PROXY_EXISTS = "proxy already exists"


def _json(status: int, payload: object) -> Response:
    return Response(status, json.dumps(payload).encode() + b"\n")


# What Go's http.Error sets: Toxiproxy's apiError, its 403 for browsers and mux's 404 all go through it.
_GO_HTTP_ERROR = "text/plain; charset=utf-8"
_NOSNIFF = {"X-Content-Type-Options": "nosniff"}


def _error(exc: ApiError) -> Response:
    """Toxiproxy's apiError: sets application/json, then calls http.Error, which overrides it."""
    return Response(exc.status, json.dumps(exc.to_json()).encode() + b"\n", _GO_HTTP_ERROR, dict(_NOSNIFF))


def _populate_error(exc: ApiError, done: list[Proxy]) -> Response:
    """Populate writes its own error: application/json, with the proxies made so far (null when none)."""
    return _json(exc.status, {**exc.to_json(), "proxies": [p.to_json() for p in done] or None})


def _decode(body: bytes) -> Any:
    if not body.strip():
        raise bad_body("EOF")
    try:
        return json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise bad_body(str(exc)) from None


class ToxiproxyApi:
    """The proxy collection and the request handlers; lives on one event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, seed: int, default_host: str) -> None:
        self.loop = loop
        self.seed = seed
        self.default_host = default_host
        self.proxies: dict[str, Proxy] = {}
        self._lock = asyncio.Lock()
        self._toxic_seq = 0

    # -- entry point --
    async def handle(self, request: Request) -> Response:
        if request.headers.get("user-agent", "").startswith("Mozilla/"):
            return Response(403, b"User agent not allowed\n", _GO_HTTP_ERROR, dict(_NOSNIFF))
        route = self._route(request)
        if isinstance(route, Response):
            return route
        async with self._lock:
            try:
                return await route(request)
            except ApiError as exc:
                return _error(exc)
            except (OSError, ValueError) as exc:
                return _error(ApiError(str(exc), 500))

    def _route(self, request: Request) -> Any:
        seg, method = request.segments, request.method
        table: dict[str, Any]
        if seg == ("version",):
            table = {"GET": self.version}
        elif seg == ("reset",):
            table = {"POST": self.reset}
        elif seg == ("populate",):
            table = {"POST": self.populate}
        elif seg == ("proxies",):
            table = {"GET": self.proxy_index, "POST": self.proxy_create}
        elif len(seg) == 2 and seg[0] == "proxies":
            table = {"GET": self.proxy_show, "POST": self.proxy_update, "PATCH": self.proxy_update,
                     "DELETE": self.proxy_delete}
        elif len(seg) == 3 and seg[0] == "proxies" and seg[2] == "toxics":
            table = {"GET": self.toxic_index, "POST": self.toxic_create}
        elif len(seg) == 4 and seg[0] == "proxies" and seg[2] == "toxics":
            table = {"GET": self.toxic_show, "POST": self.toxic_update, "PATCH": self.toxic_update,
                     "DELETE": self.toxic_delete}
        else:
            return Response(404, b"404 page not found\n", _GO_HTTP_ERROR, dict(_NOSNIFF))
        handler = table.get(method)
        if handler is None:
            return Response(405, b"", "")  # gorilla/mux: WriteHeader(405), no body, so no Content-Type
        return handler

    def _proxy(self, request: Request) -> Proxy:
        proxy = self.proxies.get(request.segments[1])
        if proxy is None:
            raise ApiError(ERR_PROXY_NOT_FOUND, 404)
        return proxy

    # -- handlers --
    async def version(self, request: Request) -> Response:
        return Response(200, json.dumps({"version": VERSION}).encode() + b"\n", "application/json;charset=utf-8")

    async def proxy_index(self, request: Request) -> Response:
        return _json(200, {name: proxy.to_json() for name, proxy in self.proxies.items()})

    def _parse_proxy(self, body: object, where: str) -> tuple[str, str, str, bool | None]:
        if not isinstance(body, dict):
            raise bad_body("json: cannot unmarshal non-object into proxy")
        values: dict[str, str] = {}
        for key in ("name", "listen", "upstream"):
            value = body.get(key) or ""
            if not isinstance(value, str):
                raise bad_body(f"json: cannot unmarshal {type(value).__name__} into field {key} of type string")
            values[key] = value
        enabled = body.get("enabled")
        if enabled is not None and not isinstance(enabled, bool):
            raise bad_body(f"json: cannot unmarshal {type(enabled).__name__} into field enabled of type bool")
        for key in ("name", "upstream"):
            if not values[key]:
                raise ApiError(f"missing required field: {key}{where}", 400)
        listen = values["listen"] or f"{self.default_host}:0"
        for key, addr in (("listen", listen), ("upstream", values["upstream"])):
            try:
                split_hostport(addr, self.default_host)
            except ValueError as exc:
                raise ApiError(f"{key}: {exc}", 400) from None
        return values["name"], listen, values["upstream"], enabled

    def _new_proxy(self, name: str, listen: str, upstream: str) -> Proxy:
        return Proxy(self.loop, name, listen, upstream, self.seed, self.default_host)

    async def proxy_create(self, request: Request) -> Response:
        name, listen, upstream, enabled = self._parse_proxy(_decode(request.body), "")
        if name in self.proxies:
            raise ApiError(ERR_PROXY_EXISTS, 409)
        proxy = self._new_proxy(name, listen, upstream)
        if enabled is None or enabled:
            await proxy.start()
        self.proxies[name] = proxy
        return _json(201, proxy.to_json())

    async def populate(self, request: Request) -> Response:
        try:
            return await self._populate(request)
        except ApiError as exc:
            return _populate_error(exc, [])

    async def _populate(self, request: Request) -> Response:
        body = _decode(request.body)
        if not isinstance(body, list):
            raise bad_body("json: cannot unmarshal object into Go value of type []struct")
        parsed = []
        seen: set[str] = set()
        for i, item in enumerate(body):
            name, listen, upstream, enabled = self._parse_proxy(item, f" at proxy {i + 1}")
            if name in seen:
                raise ApiError(f"duplicate proxy name {name!r}", 400)
            seen.add(name)
            parsed.append((name, listen, upstream, True if enabled is None else enabled))
        done: list[Proxy] = []
        for name, listen, upstream, enabled in parsed:
            existing = self.proxies.get(name)
            if existing is not None and existing.listen == listen and existing.upstream == upstream:
                done.append(existing)
                continue
            if existing is not None:
                existing.stop()
                del self.proxies[name]
            proxy = self._new_proxy(name, listen, upstream)
            try:
                if enabled:
                    await proxy.start()
            except (OSError, ValueError) as exc:
                return _populate_error(ApiError(str(exc), 500), done)
            self.proxies[name] = proxy
            done.append(proxy)
        return _json(201, {"proxies": [p.to_json() for p in done]})

    async def proxy_show(self, request: Request) -> Response:
        return _json(200, self._proxy(request).to_json())

    async def proxy_update(self, request: Request) -> Response:
        proxy = self._proxy(request)
        body = _decode(request.body)
        if not isinstance(body, dict):
            raise bad_body("json: cannot unmarshal non-object into proxy")
        listen = body.get("listen") or proxy.listen
        upstream = body.get("upstream") or proxy.upstream
        enabled = body.get("enabled", proxy.enabled)
        if not isinstance(listen, str) or not isinstance(upstream, str) or not isinstance(enabled, bool):
            raise bad_body("json: cannot unmarshal proxy fields (listen/upstream: string, enabled: bool)")
        for key, addr in (("listen", listen), ("upstream", upstream)):
            try:
                split_hostport(addr, self.default_host)
            except ValueError as exc:
                raise ApiError(f"{key}: {exc}", 400) from None
        if listen != proxy.listen or upstream != proxy.upstream:
            proxy.stop()
            proxy.listen, proxy.upstream = listen, upstream
        if enabled and not proxy.enabled:
            await proxy.start()
        elif not enabled:
            proxy.stop()
        return _json(200, proxy.to_json())

    async def proxy_delete(self, request: Request) -> Response:
        proxy = self._proxy(request)
        proxy.stop()
        del self.proxies[proxy.name]
        return Response(204)

    async def reset(self, request: Request) -> Response:
        for proxy in self.proxies.values():
            if not proxy.enabled:
                await proxy.start()
            proxy.set_toxics([])
        return Response(204)

    async def toxic_index(self, request: Request) -> Response:
        return _json(200, self._proxy(request).to_json()["toxics"])

    async def toxic_create(self, request: Request) -> Response:
        proxy = self._proxy(request)
        self._toxic_seq += 1
        toxic = parse_new_toxic(_decode(request.body), self._toxic_seq)
        if proxy.find_toxic(toxic.name) is not None:
            raise ApiError(ERR_TOXIC_EXISTS, 409)
        proxy.set_toxics([*proxy.toxics, toxic])
        return _json(200, toxic.to_json())

    def _toxic(self, request: Request) -> tuple[Proxy, str]:
        proxy = self._proxy(request)
        name = request.segments[3]
        if proxy.find_toxic(name) is None:
            raise ApiError(ERR_TOXIC_NOT_FOUND, 404)
        return proxy, name

    async def toxic_show(self, request: Request) -> Response:
        proxy, name = self._toxic(request)
        toxic = proxy.find_toxic(name)
        assert toxic is not None
        return _json(200, toxic.to_json())

    async def toxic_update(self, request: Request) -> Response:
        proxy, name = self._toxic(request)
        existing = proxy.find_toxic(name)
        assert existing is not None
        updated = parse_toxic_update(existing, _decode(request.body))
        proxy.set_toxics([updated if t.name == name else t for t in proxy.toxics])
        return _json(200, updated.to_json())

    async def toxic_delete(self, request: Request) -> Response:
        proxy, name = self._toxic(request)
        proxy.set_toxics([t for t in proxy.toxics if t.name != name])
        return Response(204)

    # -- shutdown --
    def stop_all(self) -> None:
        for proxy in self.proxies.values():
            proxy.stop()
