"""Inter-broker plumbing: the ZooKeeper-era controller requests, and connections to peer brokers.

Kafka 4 dropped LeaderAndIsr, UpdateMetadata, StopReplica and ControlledShutdown from its protocol
specs, so this broker defines its own, with API keys in a private range (10000+) that clients never
see (they are not advertised in ApiVersions). They travel with Kafka's framing (int32 size, request
header v1: api key, version, correlation id, client id) over the inter-broker listener; the body is
compact JSON. Every controller request carries `controller_id` and `controller_epoch`; a broker
answers STALE_CONTROLLER_EPOCH (11) to an epoch older than one it has seen.

`PeerConnection` is one TCP connection to one peer with one request in flight at a time (as
Kafka's NetworkClient to a node for the controller channel and for each fetcher thread).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import struct
from typing import Any

from harness.errors import HarnessError, ProtocolError

LEADER_AND_ISR = 10000
UPDATE_METADATA = 10001
STOP_REPLICA = 10002
CONTROLLED_SHUTDOWN = 10003
PRIVATE_APIS = {LEADER_AND_ISR: "LeaderAndIsr", UPDATE_METADATA: "UpdateMetadata", STOP_REPLICA: "StopReplica",
                CONTROLLED_SHUTDOWN: "ControlledShutdown"}
STALE_CONTROLLER_EPOCH = 11
NOT_CONTROLLER = 41
_HEAD = struct.Struct(">hhih")
_SIZE = struct.Struct(">i")


class PeerError(HarnessError):
    """A request to a peer broker failed (connect, send, receive or a malformed answer)."""


def encode_private_request(api_key: int, correlation_id: int, client_id: str, body: dict[str, Any]) -> bytes:
    cid = client_id.encode()
    payload = _HEAD.pack(api_key, 0, correlation_id, len(cid)) + cid + json.dumps(body, separators=(",", ":")).encode()
    return _SIZE.pack(len(payload)) + payload


def decode_private_request(frame: bytes) -> tuple[int, int, str, dict[str, Any]]:
    """(api key, correlation id, client id, body) of a private request frame (size prefix removed)."""
    try:
        api_key, _version, corr, n = _HEAD.unpack_from(frame)
        client_id = frame[_HEAD.size:_HEAD.size + max(n, 0)].decode()
        body = json.loads(frame[_HEAD.size + max(n, 0):])
    except (struct.error, ValueError) as exc:
        raise ProtocolError(f"malformed inter-broker request: {exc}") from exc
    if not isinstance(body, dict):
        raise ProtocolError("inter-broker request body is not a JSON object")
    return api_key, corr, client_id, body


def encode_private_response(correlation_id: int, body: dict[str, Any]) -> bytes:
    payload = _SIZE.pack(correlation_id) + json.dumps(body, separators=(",", ":")).encode()
    return _SIZE.pack(len(payload)) + payload


class PeerConnection:
    """One connection to a peer broker at (host, port); reconnects on the next request after a failure."""

    def __init__(self, host: str, port: int, client_id: str, timeout_s: float = 30.0) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self.timeout_s = timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._lock = asyncio.Lock()
        self._corr = itertools.count(1)

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is not None and self._writer is not None:
            return self._reader, self._writer
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection(self.host, self.port, limit=1 << 22), min(self.timeout_s, 5.0))
        except (OSError, TimeoutError) as exc:
            raise PeerError(f"cannot connect to broker at {self.host}:{self.port}: {exc!r}") from exc
        self._reader, self._writer = reader, writer
        return reader, writer

    async def roundtrip(self, build: Any, timeout_s: float | None = None) -> tuple[int, bytes]:
        """Send the frame `build(correlation_id)` returns; (correlation id, response bytes after the size)."""
        async with self._lock:
            reader, writer = await self._connect()
            corr = next(self._corr) % (2**31)
            try:
                writer.write(build(corr))
                await writer.drain()
                size = _SIZE.unpack(await asyncio.wait_for(reader.readexactly(4), timeout_s or self.timeout_s))[0]
                data = await asyncio.wait_for(reader.readexactly(size), timeout_s or self.timeout_s)
            except (OSError, TimeoutError, asyncio.IncompleteReadError) as exc:
                self.close()
                raise PeerError(f"request to broker at {self.host}:{self.port} failed: {exc!r}") from exc
            got = _SIZE.unpack_from(data)[0]
            if got != corr:
                self.close()
                raise PeerError(f"broker at {self.host}:{self.port} answered correlation id {got}, expected {corr}")
            return corr, data

    async def private(self, api_key: int, body: dict[str, Any], timeout_s: float | None = None) -> dict[str, Any]:
        _corr, data = await self.roundtrip(
            lambda c: encode_private_request(api_key, c, self.client_id, body), timeout_s)
        try:
            out = json.loads(data[4:])
        except ValueError as exc:
            raise PeerError(f"{PRIVATE_APIS.get(api_key, api_key)} answer from {self.host}:{self.port} is not JSON"
                            ) from exc
        return out if isinstance(out, dict) else {}

    async def kafka(self, request: Any, response_cls: Any, version: int, timeout_s: float | None = None) -> Any:
        """Send a kafka-python request object; decode the answer with `response_cls` at `version`."""
        def build(corr: int) -> bytes:
            request.with_header(correlation_id=corr, client_id=self.client_id)
            return bytes(request.encode(header=True, framed=True))
        _corr, data = await self.roundtrip(build, timeout_s)
        try:
            return response_cls.decode(data, version=version, header=True)
        except Exception as exc:
            raise PeerError(f"undecodable answer from {self.host}:{self.port}: {exc!r}") from exc

    def close(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
        self._reader, self._writer = None, None
