"""A proxy of the embedded Toxiproxy: its listener, its live connections and its toxic chain.

`Proxy` mirrors Toxiproxy's proxy.go: `start()` binds the listen address (port 0 → the real port is
written back into `listen`, and re-enabling binds that same port again), `stop()` closes the listener
and every live connection, and toxic changes are pushed to the live connections at once. Each accepted
client gets a `Connection`: an upstream dial, then two `Direction`s (upstream = client→server,
downstream = server→client). Whether a toxic is in effect on a connection is drawn once per
(connection, toxic) from a seed-derived RNG, so runs with the same seed draw the same.
"""

from __future__ import annotations

import asyncio
import random
import socket
from collections.abc import Callable

from harness.toxiproxy.link import Direction
from harness.toxiproxy.runners import abort_with_rst
from harness.toxiproxy.toxics import Toxic

WRITE_HIGH_WATER = 4 << 20  # transport write buffer: large, so bulk transfers are not paused per chunk


def split_hostport(addr: str, default_host: str) -> tuple[str, int]:
    """'host:port', ':port', '[v6]:port' → (host, port). Raises ValueError naming the address."""
    host, sep, port_text = addr.rpartition(":")
    if not sep:
        raise ValueError(f"address {addr!r} has no port (expected host:port)")
    host = host.strip("[]") or default_host
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"address {addr!r} has a non-numeric port {port_text!r}") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"address {addr!r} has port {port} outside 0..65535")
    return host, port


def join_hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Side(asyncio.Protocol):
    """One socket of a connection: reads feed `out_dir`, writes come from `in_dir`."""

    def __init__(self, conn: Connection, role: str) -> None:
        self.conn = conn
        self.role = role
        self.transport: asyncio.Transport | None = None
        self.out_dir: Direction | None = None
        self.in_dir: Direction | None = None
        self.pending: list[bytes] = []
        self.pending_eof = False
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)
        self.conn.side_made(self)

    def data_received(self, data: bytes) -> None:
        out = self.out_dir
        if out is None:
            self.pending.append(data)
        elif out.stages or out.eof_fed:
            out.feed(data)
        elif not out.dest_closed:
            out.dest.write(data)  # type: ignore[union-attr]  # hot path: no toxic in effect

    def eof_received(self) -> bool:
        if self.out_dir is None:
            self.pending_eof = True
        else:
            self.out_dir.feed_eof()
        return True  # keep the socket open for the other direction; it is closed when that ends

    def pause_writing(self) -> None:
        if self.in_dir is not None:
            self.in_dir.set_dest_paused(True)

    def resume_writing(self) -> None:
        if self.in_dir is not None:
            self.in_dir.set_dest_paused(False)

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.conn.side_lost(self)


class Connection:
    """One client connection through a proxy, and its dial to the upstream."""

    def __init__(self, proxy: Proxy, index: int) -> None:
        self.proxy = proxy
        self.index = index
        loop = proxy.loop
        self.client = _Side(self, "client")
        self.upstream: _Side | None = None
        self.up = Direction(loop, "upstream", self)
        self.down = Direction(loop, "downstream", self)
        self.draws: dict[tuple[str, int], float] = {}
        self.dial: asyncio.Task[None] | None = None
        self.closed = False

    # -- wiring --
    def side_made(self, side: _Side) -> None:
        if side is self.client:
            assert side.transport is not None
            side.transport.pause_reading()
            self.dial = self.proxy.loop.create_task(self._dial())

    async def _dial(self) -> None:
        host, port = split_hostport(self.proxy.upstream, "127.0.0.1")
        side = _Side(self, "upstream")
        try:
            await self.proxy.loop.create_connection(lambda: side, host, port)
        except (TimeoutError, OSError):
            self.abort()  # Toxiproxy closes the client when the upstream cannot be reached
            return
        if self.closed or self.client.lost:
            if side.transport is not None:
                side.transport.abort()
            return
        self.upstream = side
        client_t, upstream_t = self.client.transport, side.transport
        assert client_t is not None and upstream_t is not None
        self.up.source, self.up.dest = client_t, upstream_t
        self.down.source, self.down.dest = upstream_t, client_t
        self.client.out_dir, self.client.in_dir = self.up, self.down
        side.out_dir, side.in_dir = self.down, self.up
        self.reconcile()
        for data in self.client.pending:
            self.up.feed(data)
        self.client.pending.clear()
        if self.client.pending_eof:
            self.up.feed_eof()
        if not self.up.source_paused:  # flow control may have paused it while the backlog was fed
            client_t.resume_reading()

    def side_lost(self, side: _Side) -> None:
        if side.out_dir is not None:
            side.out_dir.feed_eof()
        if side.in_dir is not None:
            side.in_dir.dest_lost()
        if self.client.lost and (self.upstream is None or self.upstream.lost):
            self._finish()

    def _finish(self) -> None:
        self.closed = True
        if self.dial is not None and not self.dial.done():
            self.dial.cancel()  # the client left before the upstream answered
        self.up.cancel_stages()
        self.down.cancel_stages()
        self.proxy.connections.discard(self)

    # -- control --
    def abort(self) -> None:
        """Close both sockets now (proxy disabled or deleted, upstream unreachable)."""
        self.closed = True
        if self.dial is not None and not self.dial.done():
            self.dial.cancel()
        for side in (self.client, self.upstream):
            if side is not None and side.transport is not None:
                side.transport.abort()
        self.up.cancel_stages()
        self.down.cancel_stages()
        self.proxy.connections.discard(self)

    def reset(self) -> None:
        """reset_peer: RST both sockets."""
        self.closed = True
        abort_with_rst(self.client.transport)
        abort_with_rst(self.upstream.transport if self.upstream else None)
        self.up.cancel_stages()
        self.down.cancel_stages()

    def draw(self, toxic: Toxic) -> float:
        key = (toxic.name, toxic.seq)
        value = self.draws.get(key)
        if value is None:
            value = self.proxy.rng_for(self.index, toxic, "toxicity").random()
            self.draws[key] = value
        return value

    def reconcile(self) -> None:
        if self.closed or self.upstream is None:
            return
        for direction in (self.up, self.down):
            desired = [
                t
                for t in self.proxy.toxics
                if t.stream == direction.stream and self.draw(t) < t.toxicity
            ]
            direction.reconcile(desired, self._rng_factory())

    def _rng_factory(self) -> Callable[[Toxic], random.Random]:
        return lambda toxic: self.proxy.rng_for(self.index, toxic, "stage")


class Proxy:
    """A named proxy: listen address, upstream, enabled flag, toxics, live connections."""

    def __init__(self, loop: asyncio.AbstractEventLoop, name: str, listen: str, upstream: str,
                 seed: int, default_host: str) -> None:
        self.loop = loop
        self.name = name
        self.listen = listen
        self.upstream = upstream
        self.enabled = False
        self.seed = seed
        self.default_host = default_host
        self.toxics: list[Toxic] = []
        self.connections: set[Connection] = set()
        self._server: asyncio.base_events.Server | None = None
        self._accepted = 0

    def to_json(self) -> dict[str, object]:
        ordered = [t for t in self.toxics if t.stream == "upstream"]
        ordered += [t for t in self.toxics if t.stream == "downstream"]
        return {
            "name": self.name,
            "listen": self.listen,
            "upstream": self.upstream,
            "enabled": self.enabled,
            # Toxiproxy 2.5.0 to 2.12.0 serialise their Proxy struct's untagged `Logger *zerolog.Logger`
            # field (proxy.go), which has no exported fields: every proxy object carries `"Logger": {}`.
            "Logger": {},
            "toxics": [t.to_json() for t in ordered],
        }

    def rng_for(self, conn_index: int, toxic: Toxic, purpose: str) -> random.Random:
        # str seeds are hashed with SHA-512 by random.Random: stable across processes and runs.
        return random.Random(f"{self.seed}/{self.name}/{conn_index}/{toxic.name}/{purpose}")

    async def start(self) -> None:
        """Bind and listen; raises OSError/ValueError if the address cannot be bound."""
        if self.enabled:
            return
        host, port = split_hostport(self.listen, self.default_host)
        infos = await self.loop.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        if not infos:
            raise OSError(f"listen address {self.listen!r} does not resolve")
        infos.sort(key=lambda info: info[0] != socket.AF_INET)  # prefer IPv4 for names like localhost
        family, kind, proto, _, sockaddr = infos[0]
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(sockaddr)
            sock.listen(512)
            sock.setblocking(False)
            self._server = await self.loop.create_server(self._new_connection, sock=sock)
        except BaseException:
            sock.close()
            raise
        bound = sock.getsockname()
        self.listen = join_hostport(str(bound[0]), int(bound[1]))
        self.enabled = True

    def _new_connection(self) -> asyncio.Protocol:
        conn = Connection(self, self._accepted)
        self._accepted += 1
        self.connections.add(conn)
        return conn.client

    def stop(self) -> None:
        """Stop listening and close every live connection (Toxiproxy's disable)."""
        if not self.enabled:
            return
        self.enabled = False
        if self._server is not None:
            self._server.close()  # the listening socket is closed at once
            self._server = None
        for conn in list(self.connections):
            conn.abort()

    # -- toxics --
    def find_toxic(self, name: str) -> Toxic | None:
        return next((t for t in self.toxics if t.name == name), None)

    def set_toxics(self, toxics: list[Toxic]) -> None:
        self.toxics = toxics
        for conn in list(self.connections):
            conn.reconcile()
