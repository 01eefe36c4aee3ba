"""Unit tests of the wire protocol layer, against an in-process broker (no ZooKeeper, no child process)."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from typing import Any

from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse, MetadataRequest, MetadataResponse
from kafka.protocol.producer import ProduceRequest, ProduceResponse

from harness.broker.config import build_config
from harness.broker.protocol import APIS
from harness.broker.records import build_batch
from harness.broker.server import Broker


async def _roundtrip(port: int, frames: list[bytes]) -> list[bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for f in frames:
        writer.write(f)
    out = []
    try:
        for _ in frames:
            size = struct.unpack(">i", await asyncio.wait_for(reader.readexactly(4), 5))[0]
            out.append(await reader.readexactly(size))
    finally:
        writer.close()
    return out


def _frame(req: Any, corr: int) -> bytes:
    req.with_header(correlation_id=corr, client_id="unit")
    return bytes(req.encode(header=True, framed=True))


def _run(tmp_path: Path, body: Any) -> Any:
    async def main() -> Any:
        cfg = build_config({"log.dirs": str(tmp_path), "listeners": "PLAINTEXT://127.0.0.1:0"})
        broker = Broker(cfg)
        await broker.start()
        try:
            return await body(broker.bound["PLAINTEXT"].port)
        finally:
            await broker.stop()
    return asyncio.run(main())


def test_apiversions_v3_gets_unsupported_version_with_v0_body_then_v0_negotiates(tmp_path: Path) -> None:
    """librdkafka's opening ApiVersions v3 gets error 35 + our ranges in a v0 response; v0 then succeeds."""
    async def body(port: int) -> None:
        v3 = _frame(ApiVersionsRequest(version=3, client_software_name="x", client_software_version="1"), 1)
        v0 = _frame(ApiVersionsRequest(version=0), 2)
        first, second = await _roundtrip(port, [v3, v0])
        r1 = ApiVersionsResponse.decode(first, version=0, header=True)
        assert r1.header.correlation_id == 1 and r1.error_code == 35
        ranges = {a.api_key: (a.min_version, a.max_version) for a in r1.api_keys}
        assert ranges[0] == (3, 8) and ranges[18] == (0, 2)
        r2 = ApiVersionsResponse.decode(second, version=0, header=True)
        assert r2.error_code == 0 and len(r2.api_keys) == len(APIS)
    _run(tmp_path, body)


def test_advertised_versions_are_all_non_flexible() -> None:
    """Every advertised max version is below the API's first flexible version."""
    for api in APIS.values():
        if api.name != "DescribeCluster":  # exists only flexible
            assert not api.request.flexible_version_q(api.max_version), api.name


def test_pipelined_requests_are_answered_in_order(tmp_path: Path) -> None:
    """Several requests written at once on one connection come back in request order."""
    async def body(port: int) -> None:
        frames = [_frame(MetadataRequest(version=1, topics=None), c) for c in range(10, 15)]
        replies = await _roundtrip(port, frames)
        assert [MetadataResponse.decode(r, version=1, header=True).header.correlation_id
                for r in replies] == list(range(10, 15))
    _run(tmp_path, body)


def test_produce_v7_appends_and_rewrites_offsets(tmp_path: Path) -> None:
    """Produce to an auto-created topic: batches get consecutive base offsets."""
    async def body(port: int) -> None:
        meta = _frame(MetadataRequest(version=4, topics=[MetadataRequest.MetadataRequestTopic(name="p")],
                                      allow_auto_topic_creation=True), 1)
        T = ProduceRequest.TopicProduceData
        prods = [_frame(ProduceRequest(version=7, transactional_id=None, acks=1, timeout_ms=1000, topic_data=[
            T(name="p", partition_data=[T.PartitionProduceData(index=0, records=build_batch(
                [(None, b"a"), (None, b"b")], 1))])]), c) for c in (2, 3)]
        replies = await _roundtrip(port, [meta, *prods])
        bases = [ProduceResponse.decode(r, version=7, header=True).responses[0].partition_responses[0].base_offset
                 for r in replies[1:]]
        assert bases == [0, 2]
    _run(tmp_path, body)


def test_metadata_answers_with_the_address_of_the_listener_asked(tmp_path: Path) -> None:
    """With several listeners (one per source broker in the harness), Metadata advertises the one the request used."""
    async def main() -> None:
        cfg = build_config({"log.dirs": str(tmp_path), "broker.id": "4",
                            "listeners": "FROM1://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
                            "advertised.listeners": "FROM1://proxy-1-4:7001,EXTERNAL://client-4:7002",
                            "listener.security.protocol.map": "FROM1:PLAINTEXT,EXTERNAL:PLAINTEXT"})
        broker = Broker(cfg)
        await broker.start()
        try:
            for name, expected in (("FROM1", ("proxy-1-4", 7001)), ("EXTERNAL", ("client-4", 7002))):
                reply = (await _roundtrip(broker.bound[name].port,
                                          [_frame(MetadataRequest(version=1, topics=None), 1)]))[0]
                r = MetadataResponse.decode(reply, version=1, header=True)
                assert [(b.node_id, b.host, b.port) for b in r.brokers] == [(4, *expected)]
                assert r.controller_id == 4
        finally:
            await broker.stop()
    asyncio.run(main())
