"""A minimal HTTP/1.1 server over asyncio streams, enough for the Toxiproxy JSON API.

Handles keep-alive (requests.Session, the Go client) and `Connection: close` (urllib), bodies by
Content-Length or chunked transfer encoding, and closes idle connections on shutdown. No TLS, no
pipelining guarantees beyond sequential processing, no multipart: the Toxiproxy API needs none.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from urllib.parse import unquote

MAX_LINE = 16 << 10
MAX_BODY = 8 << 20
IDLE_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    segments: tuple[str, ...]
    headers: dict[str, str]
    body: bytes


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


Handler = Callable[[Request], Awaitable[Response]]


class BadRequest(Exception):
    """The bytes on the wire are not an HTTP/1.x request we can serve."""


def path_segments(path: str) -> tuple[str, ...]:
    """'/proxies/a%3Eb/toxics' → ('proxies', 'a>b', 'toxics'); split before unquoting."""
    return tuple(unquote(part) for part in path.split("/") if part)


async def _read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "chunked" in headers.get("transfer-encoding", "").lower():
        parts: list[bytes] = []
        total = 0
        while True:
            size_line = await reader.readuntil(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":
                    pass  # trailers
                return b"".join(parts)
            total += size
            if total > MAX_BODY:
                raise BadRequest("body too large")
            parts.append(await reader.readexactly(size))
            await reader.readexactly(2)
    length_text = headers.get("content-length", "0").strip() or "0"
    try:
        length = int(length_text)
    except ValueError:
        raise BadRequest(f"bad Content-Length {length_text!r}") from None
    if length < 0 or length > MAX_BODY:
        raise BadRequest(f"Content-Length {length} out of range")
    return await reader.readexactly(length) if length else b""


async def read_request(reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter | None = None) -> tuple[Request, bool] | None:
    """Read one request; returns (request, keep_alive) or None at a clean end of stream.

    With a `writer`, answers `Expect: 100-continue` (curl sends it for bodies over 1 KB).
    """
    line = await reader.readline()
    if not line:
        return None
    if not line.endswith(b"\n"):
        raise BadRequest("request line too long or truncated")
    try:
        method, target, version = line.decode("latin-1").strip().split(" ")
    except ValueError:
        raise BadRequest(f"malformed request line {line[:100]!r}") from None
    if not version.startswith("HTTP/1."):
        raise BadRequest(f"unsupported protocol {version!r}")
    headers: dict[str, str] = {}
    while True:
        raw = await reader.readline()
        if raw in (b"\r\n", b"\n", b""):
            break
        name, sep, value = raw.decode("latin-1").partition(":")
        if not sep:
            raise BadRequest(f"malformed header line {raw[:100]!r}")
        headers[name.strip().lower()] = value.strip()
    if writer is not None and headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    body = await _read_body(reader, headers)
    path = target.split("?", 1)[0]
    connection = headers.get("connection", "").lower()
    keep_alive = connection != "close" if version == "HTTP/1.1" else connection == "keep-alive"
    return Request(method.upper(), path, path_segments(path), headers, body), keep_alive


def encode_response(resp: Response, keep_alive: bool) -> bytes:
    try:
        reason = HTTPStatus(resp.status).phrase
    except ValueError:
        reason = ""
    lines = [f"HTTP/1.1 {resp.status} {reason}"]
    if resp.status != 204:
        if resp.content_type:  # "" sends none, as Go's net/http for an empty body (mux's 405)
            lines.append(f"Content-Type: {resp.content_type}")
        lines.append(f"Content-Length: {len(resp.body)}")
    lines.extend(f"{k}: {v}" for k, v in resp.headers.items())
    lines.append("Connection: keep-alive" if keep_alive else "Connection: close")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head if resp.status == 204 else head + resp.body


class HttpServer:
    """Serves `handler` on host:port; `close()` stops listening and drops every open connection."""

    def __init__(self, handler: Handler) -> None:
        self._handler = handler
        self._server: asyncio.base_events.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self, host: str, port: int) -> tuple[str, int]:
        self._server = await asyncio.start_server(self._serve, host, port, limit=MAX_LINE, backlog=128)
        sockname = self._server.sockets[0].getsockname()
        return str(sockname[0]), int(sockname[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for writer in list(self._writers):
            writer.transport.abort()  # handlers then see a closed stream and return
        if self._tasks:
            _, pending = await asyncio.wait(list(self._tasks), timeout=2.0)
            for task in pending:
                task.cancel()
        self._server = None

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._writers.add(writer)
        try:
            while True:
                try:
                    got = await asyncio.wait_for(read_request(reader, writer), IDLE_TIMEOUT_S)
                except BadRequest as exc:
                    writer.write(encode_response(Response(400, str(exc).encode(), "text/plain"), False))
                    await writer.drain()
                    return
                if got is None:
                    return
                request, keep_alive = got
                response = await self._handler(request)
                writer.write(encode_response(response, keep_alive))
                await writer.drain()
                if not keep_alive:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError, ValueError):
            pass
        except asyncio.CancelledError:
            pass  # top of its own task: asyncio's stream callback must not see a cancelled task
        finally:
            self._writers.discard(writer)
            self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()
