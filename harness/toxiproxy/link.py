"""One direction of one proxied connection: the fast pass-through path and the chain of toxic stages.

A `Direction` carries bytes from a source socket to a destination socket. With no toxic in effect it
writes each read straight to the destination (no task, no copy, no per-chunk bookkeeping). With toxics
it feeds a chain of `Stage`s (one asyncio task each, like Toxiproxy's ToxicStubs) ending at the
destination. A stage pops a chunk from its inbox only once it has forwarded or dropped it, so a stage
can be cancelled at any await and restarted (toxic updated) or removed (its held data moves on) without
losing or reordering bytes: that is how toxic changes reach live connections. EOF is a chunk with
`data is None`; when it reaches the end the destination is closed, as Toxiproxy does.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import deque
from collections.abc import Callable
from typing import Protocol

from harness.toxiproxy.runners import RUNNERS
from harness.toxiproxy.toxics import Toxic

_log = logging.getLogger(__name__)

HIGH_WATER = 4 << 20  # bytes held inside a toxic chain before the source is paused (Toxiproxy buffers more)
LOW_WATER = 1 << 20


class Chunk:
    """Bytes read from the source (or EOF when `data is None`), stamped when they entered a stage."""

    __slots__ = ("data", "stamp")

    def __init__(self, data: bytes | None, stamp: float = 0.0) -> None:
        self.data = data
        self.stamp = stamp


class Endpoint(Protocol):
    """What a `Direction` needs from its connection (implemented by proxy.Connection)."""

    def reset(self) -> None: ...


class Stage:
    """One toxic in effect on one direction of one connection."""

    def __init__(self, direction: Direction, toxic: Toxic, rng: random.Random) -> None:
        self.direction = direction
        self.toxic = toxic
        self.rng = rng
        self.inbox: deque[Chunk] = deque()
        self.nbytes = 0
        self.next: Stage | None = None
        self.task: asyncio.Task[None] | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.loop = direction.loop
        self.started_at = self.loop.time()
        self.state: dict[str, float] = {}
        self.eof_queued = False
        self.finished = False

    # -- data movement (synchronous, called on the loop) --
    def push(self, chunk: Chunk) -> None:
        if self.eof_queued or self.finished:
            return  # after EOF nothing more flows (Toxiproxy closes the stub's output)
        chunk.stamp = self.loop.time()
        if chunk.data is None:
            self.eof_queued = True
        else:
            self.nbytes += len(chunk.data)
        self.inbox.append(chunk)
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def pop(self) -> Chunk:
        chunk = self.inbox.popleft()
        if chunk.data is not None:
            self.nbytes -= len(chunk.data)
        return chunk

    def forward(self, chunk: Chunk) -> None:
        if self.next is not None:
            self.next.push(chunk)
        else:
            self.direction.deliver(chunk)
        if chunk.data is None:
            self.finished = True
        self.direction.relieve()

    def pass_front(self) -> None:
        self.forward(self.pop())

    def forward_head(self, size: int) -> None:
        """Forward the first `size` bytes of the oldest chunk; the rest stays at the front."""
        chunk = self.inbox[0]
        assert chunk.data is not None
        if size >= len(chunk.data):
            self.pass_front()
            return
        head, chunk.data = chunk.data[:size], chunk.data[size:]
        self.nbytes -= size
        self.forward(Chunk(head))

    def truncate_front(self, size: int) -> None:
        """Keep only the first `size` bytes of the oldest chunk (the rest is dropped)."""
        chunk = self.inbox[0]
        assert chunk.data is not None
        if len(chunk.data) > size:
            self.nbytes -= len(chunk.data) - size
            chunk.data = chunk.data[:size]

    def close_output(self) -> None:
        """Drop what is held and send EOF on: the connection is closed downstream (stub.Close())."""
        self.inbox.clear()
        self.nbytes = 0
        self.forward(Chunk(None))

    def take_all(self) -> list[Chunk]:
        items = list(self.inbox)
        self.inbox.clear()
        self.nbytes = 0
        return items

    async def peek(self, deadline: float | None = None) -> Chunk | None:
        """The oldest unforwarded chunk, waiting for one; None if `deadline` (loop time) passes first."""
        while not self.inbox:
            self.waiter = self.loop.create_future()
            handle = None
            if deadline is not None:
                delay = deadline - self.loop.time()
                if delay <= 0:
                    return None
                handle = self.loop.call_later(delay, _resolve, self.waiter)
            try:
                await self.waiter
            finally:
                self.waiter = None
                if handle is not None:
                    handle.cancel()
            if deadline is not None and not self.inbox and self.loop.time() >= deadline:
                return None
        return self.inbox[0]

    # -- lifecycle --
    def start(self) -> None:
        if not self.finished and self.task is None:
            self.task = self.loop.create_task(RUNNERS[self.toxic.type](self))
            self.task.add_done_callback(self._ended)

    def _ended(self, task: asyncio.Task[None]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        # A bug in a toxic must not leave the connection hanging silently: log it and reset the link.
        _log.error("toxic %r (%s) failed on a %s link; resetting the connection", self.toxic.name,
                   self.toxic.type, self.direction.stream, exc_info=task.exception())
        self.direction.endpoint.reset()

    def cancel(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class Direction:
    """Bytes from `source` to `dest` transports, through `stages` when any toxic is in effect."""

    def __init__(self, loop: asyncio.AbstractEventLoop, stream: str, endpoint: Endpoint) -> None:
        self.loop = loop
        self.stream = stream
        self.endpoint = endpoint
        self.source: asyncio.Transport | None = None
        self.dest: asyncio.Transport | None = None
        self.stages: list[Stage] = []
        self.dest_paused = False
        self.source_paused = False
        self.eof_fed = False
        self.dest_closed = False

    # -- from the source side --
    def feed(self, data: bytes) -> None:
        if self.eof_fed:
            return
        if not self.stages:
            if not self.dest_closed:
                self.dest.write(data)  # type: ignore[union-attr]
            return
        self.stages[0].push(Chunk(data))
        if self.backlog() > HIGH_WATER:
            self._pause_source()

    def feed_eof(self) -> None:
        if self.eof_fed:
            return
        self.eof_fed = True
        if self.stages:
            self.stages[0].push(Chunk(None))
        else:
            self.deliver(Chunk(None))

    # -- to the destination side --
    def deliver(self, chunk: Chunk) -> None:
        if self.dest_closed or self.dest is None:
            return
        if chunk.data is None:
            self.dest_closed = True
            self.dest.close()  # flushes what is buffered, then FIN (Toxiproxy closes the dest conn)
        elif chunk.data:
            self.dest.write(chunk.data)

    def dest_lost(self) -> None:
        """The destination socket is gone: nothing can be delivered any more."""
        self.dest_closed = True
        self.cancel_stages()

    # -- flow control --
    def backlog(self) -> int:
        return sum(stage.nbytes for stage in self.stages)

    def _pause_source(self) -> None:
        if not self.source_paused and self.source is not None:
            self.source_paused = True
            self.source.pause_reading()

    def relieve(self) -> None:
        """Called when data left the chain: resume the source once there is room again."""
        if self.source_paused and not self.dest_paused and self.backlog() < LOW_WATER:
            self.source_paused = False
            if self.source is not None and not self.source.is_closing():
                self.source.resume_reading()

    def set_dest_paused(self, paused: bool) -> None:
        self.dest_paused = paused
        if paused:
            self._pause_source()
        else:
            self.relieve()

    # -- toxics --
    def reconcile(self, desired: list[Toxic], rng_for: Callable[[Toxic], random.Random]) -> None:
        """Make `stages` match `desired` (toxics in effect, chain order) without losing held bytes.

        Every stage is interrupted; retained stages keep their inbox and restart (with the updated
        toxic); a removed stage hands its held chunks to the next stage after it (or the destination),
        oldest first; a removed `timeout` that was blackholing closes the link, as Toxiproxy's cleanup.
        """
        old = self.stages
        by_name = {stage.toxic.name: stage for stage in old}
        new: list[Stage] = []
        for toxic in desired:
            stage = by_name.get(toxic.name)
            if stage is None or stage.toxic.seq != toxic.seq:
                stage = Stage(self, toxic, rng_for(toxic))
            stage.toxic = toxic
            new.append(stage)
        kept = {id(stage) for stage in new}
        for stage in old:
            stage.cancel()
        for stage in reversed(old):
            if id(stage) in kept:
                continue
            target = next((n for n in new if n.toxic.seq > stage.toxic.seq), None)
            items = stage.take_all()
            if stage.toxic.type == "timeout" and not stage.finished:
                items = [Chunk(None)]  # held data was dropped; removing the toxic closes the link
            for item in items:
                if target is not None:
                    target.push(item)
                else:
                    self.deliver(item)
        for i, stage in enumerate(new):
            stage.next = new[i + 1] if i + 1 < len(new) else None
        self.stages = new
        for stage in new:
            stage.start()
        self.relieve()

    def cancel_stages(self) -> None:
        for stage in self.stages:
            stage.cancel()
