"""The embedded Toxiproxy's minimal HTTP/1.1 parsing and encoding (in-memory streams, no sockets)."""

from __future__ import annotations

import asyncio

import pytest

from harness.toxiproxy.http import BadRequest, Request, Response, encode_response, path_segments, read_request


def _parse(raw: bytes) -> tuple[Request, bool] | None:
    async def go() -> tuple[Request, bool] | None:
        reader = asyncio.StreamReader()
        reader.feed_data(raw)
        reader.feed_eof()
        return await read_request(reader)

    return asyncio.run(go())


def test_content_length_body_and_http11_keep_alive() -> None:
    got = _parse(b"POST /proxies?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\n{}")
    assert got is not None
    request, keep_alive = got
    assert (request.method, request.path, request.segments, request.body, keep_alive) == (
        "POST", "/proxies", ("proxies",), b"{}", True)


def test_chunked_body_and_connection_close() -> None:
    raw = b"PATCH /p HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n"
    got = _parse(raw)
    assert got is not None
    request, keep_alive = got
    assert (request.body, keep_alive) == (b"abc", False)


def test_http10_closes_unless_keep_alive_is_asked() -> None:
    closing = _parse(b"GET /version HTTP/1.0\r\n\r\n")
    kept = _parse(b"GET /version HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
    assert closing is not None and closing[1] is False
    assert kept is not None and kept[1] is True


def test_clean_end_of_stream_is_none_and_garbage_is_bad_request() -> None:
    assert _parse(b"") is None
    with pytest.raises(BadRequest):
        _parse(b"NOT-HTTP\r\n\r\n")


def test_path_segments_are_split_before_percent_decoding() -> None:
    assert path_segments("/proxies/client-%3E1/toxics/a%2Fb") == ("proxies", "client->1", "toxics", "a/b")


def test_204_has_no_body_or_content_headers() -> None:
    wire = encode_response(Response(204, b"ignored"), keep_alive=True)
    assert wire.startswith(b"HTTP/1.1 204 No Content\r\n")
    assert b"Content-Length" not in wire and wire.endswith(b"\r\n\r\n")
