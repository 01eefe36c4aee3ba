"""Toxic behaviours: one coroutine per Toxiproxy toxic type, run as a link `Stage`'s task.

Each mirrors Toxiproxy's toxics/*.go: latency (± jitter per chunk, measured from when the chunk reached
the stage, so chunks pipeline), bandwidth (KB/s = 1000 B/s, at most 100 ms worth per write), slow_close
(delays the close), timeout (drops data; closes after `timeout` ms from when it took effect, never if
0), reset_peer (on the first data, after `timeout` ms, RST both sockets), slicer (splits chunks,
`delay` µs between slices), limit_data (closes after `bytes` bytes). A runner never awaits between
deciding to forward a chunk and forwarding it, so cancelling it at any await loses no data.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from harness.toxiproxy.toxics import slice_sizes

if TYPE_CHECKING:
    from harness.toxiproxy.link import Stage

# ---------------------------------------------------------------------------------------------


async def _run_latency(stage: Stage) -> None:
    while True:
        chunk = await stage.peek()
        assert chunk is not None
        if chunk.data is not None:
            delay = stage.toxic.attr("latency")
            jitter = stage.toxic.attr("jitter")
            if jitter > 0:
                delay += stage.rng.randrange(-jitter, jitter)
            wait = chunk.stamp + delay / 1000.0 - stage.loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
        stage.pass_front()
        if chunk.data is None:
            return


async def _run_bandwidth(stage: Stage) -> None:
    while True:
        chunk = await stage.peek()
        assert chunk is not None
        if chunk.data is None:
            stage.pass_front()
            return
        rate = stage.toxic.attr("rate") * 1000  # bytes per second
        if rate <= 0:
            await stage.loop.create_future()  # 0 KB/s: nothing passes until the toxic changes
            continue
        piece = max(1, rate // 10)  # send at most 100 ms worth at a time
        now = stage.loop.time()
        # Backlogged (the chunk arrived before the previous release): pace from the previous release,
        # so a late wake-up is caught up; idle: pace from the chunk's arrival.
        release = max(stage.state.get("release_at", 0.0), chunk.stamp) + min(len(chunk.data), piece) / rate
        stage.state["release_at"] = release
        if release > now:
            await asyncio.sleep(release - now)
        stage.forward_head(piece)


async def _run_slow_close(stage: Stage) -> None:
    while True:
        chunk = await stage.peek()
        assert chunk is not None
        if chunk.data is None:
            delay = stage.toxic.attr("delay") / 1000.0
            wait = chunk.stamp + delay - stage.loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            stage.pass_front()
            return
        stage.pass_front()


async def _run_timeout(stage: Stage) -> None:
    timeout = stage.toxic.attr("timeout")
    deadline = stage.started_at + timeout / 1000.0 if timeout > 0 else None
    while True:
        chunk = await stage.peek(deadline)
        if chunk is None:  # timeout elapsed: close the connection
            stage.close_output()
            return
        if chunk.data is None:
            stage.pass_front()
            return
        stage.pop()  # blackholed: the data is dropped, as Toxiproxy does
        stage.direction.relieve()


async def _run_reset_peer(stage: Stage) -> None:
    await stage.peek()  # Toxiproxy waits for the first data (or EOF) on the stream
    timeout = stage.toxic.attr("timeout") / 1000.0
    if timeout > 0:
        await asyncio.sleep(timeout)
    stage.take_all()
    stage.finished = True
    stage.direction.endpoint.reset()


async def _run_slicer(stage: Stage) -> None:
    while True:
        chunk = await stage.peek()
        assert chunk is not None
        if chunk.data is None:
            stage.pass_front()
            return
        sizes = slice_sizes(
            len(chunk.data),
            stage.toxic.attr("average_size"),
            stage.toxic.attr("size_variation"),
            stage.rng.randrange,
        )
        delay = stage.toxic.attr("delay") / 1_000_000.0
        for size in sizes:
            stage.forward_head(size)
            if delay > 0:
                await asyncio.sleep(delay)


async def _run_limit_data(stage: Stage) -> None:
    limit = stage.toxic.attr("bytes")
    while True:
        chunk = await stage.peek()
        assert chunk is not None
        if chunk.data is None:
            stage.pass_front()
            return
        sent = int(stage.state.get("sent", 0))
        remaining = limit - sent
        if remaining <= 0:
            stage.close_output()
            return
        stage.truncate_front(remaining)
        stage.state["sent"] = sent + len(chunk.data)
        stage.pass_front()
        if sent + len(chunk.data) >= limit:
            stage.close_output()
            return


RUNNERS: dict[str, Callable[[Stage], Coroutine[Any, Any, None]]] = {
    "latency": _run_latency,
    "bandwidth": _run_bandwidth,
    "slow_close": _run_slow_close,
    "timeout": _run_timeout,
    "reset_peer": _run_reset_peer,
    "slicer": _run_slicer,
    "limit_data": _run_limit_data,
}


def abort_with_rst(transport: asyncio.Transport | None) -> None:
    """Close a TCP transport with SO_LINGER 0, so the peer sees a RST (connection reset by peer)."""
    if transport is None or transport.is_closing():
        if transport is not None:
            transport.abort()
        return
    sock = transport.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
