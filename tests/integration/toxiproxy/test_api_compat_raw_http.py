"""Every Toxiproxy 2.x API endpoint and status code, over raw HTTP (http.client), against the embedded
server and the real Toxiproxy (`any_toxiproxy`: parametrized "embedded" / "real").

The embedded server answers as Toxiproxy 2.12.0 does. Where a real server of another version answers
differently, the test says which versions, as Toxiproxy's own source and CHANGELOG show them:
- `PATCH` on proxies and toxics arrived in 2.6.0 (before it: 405);
- `GET /version` is plain text before 2.6.0, JSON since 2.7.0 (2.6.0 sent invalid JSON, #538);
- `POST /populate` answers, for a proxy it keeps as it is, with a throwaway never-started copy
  (`"enabled": false`) before 2.12.0 (#631: AddOrReplace now returns the proxy it kept).
And one difference on purpose: the embedded server refuses negative toxic attributes with 400, where
Toxiproxy validates none (harness/toxiproxy/toxics.py says why).
"""

from __future__ import annotations

import http.client
import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.fixtures.toxiproxy import EchoServer, ToxiproxyUnderTest, connect

pytestmark = pytest.mark.integration

# What Go's http.Error sends, and so every Toxiproxy API error but populate's.
GO_HTTP_ERROR = "text/plain; charset=utf-8"


class Api:
    """One keep-alive HTTP/1.1 connection to the API, as Toxiproxy's Go client would use.

    Bodies come back parsed when they are JSON: `application/json`, or an error in Go's http.Error
    framing (`text/plain; charset=utf-8`, JSON plus a newline). `.headers` and `.raw` are the last response's.
    """

    def __init__(self, server: ToxiproxyUnderTest) -> None:
        self.server = server
        self.conn = http.client.HTTPConnection(server.host, server.port, timeout=5)
        self.headers: http.client.HTTPMessage | None = None
        self.raw = b""

    def call(self, method: str, path: str, body: object = None, raw: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
        payload = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        self.conn.request(method, path, body=payload, headers=headers or {})
        resp = self.conn.getresponse()
        data = resp.read()
        self.headers, self.raw = resp.headers, data
        content_type = resp.getheader("Content-Type", "")
        go_error = resp.status >= 400 and content_type == GO_HTTP_ERROR and data.startswith(b"{")
        if data and (content_type.startswith("application/json") or go_error):
            return resp.status, json.loads(data)
        return resp.status, data

    def header(self, name: str) -> str | None:
        assert self.headers is not None
        return self.headers.get(name)

    @property
    def update(self) -> str:
        """The method that updates a proxy or toxic: PATCH since Toxiproxy 2.6.0, POST before (and still)."""
        return "PATCH" if self.server.version_at_least(2, 6) else "POST"


@pytest.fixture
def api(any_toxiproxy: ToxiproxyUnderTest) -> Iterator[Api]:
    client = Api(any_toxiproxy)
    yield client
    client.conn.close()


PROXY_KEYS = {"name", "listen", "upstream", "enabled", "Logger", "toxics"}  # "Logger": {} see proxy.py


def _create(api: Api, echo: EchoServer, name: str = "p", **extra: object) -> dict[str, Any]:
    status, body = api.call("POST", "/proxies", {"name": name, "upstream": echo.addr, "listen": "127.0.0.1:0",
                                                  **extra})
    assert status == 201, body
    return body


def test_version_is_200_json_since_2_7_plain_text_before_2_6(api: Api, any_toxiproxy: ToxiproxyUnderTest) -> None:
    status, body = api.call("GET", "/version")
    assert status == 200
    if any_toxiproxy.version_at_least(2, 7):
        assert api.header("Content-Type") == "application/json;charset=utf-8" and body["version"].startswith("2.")
    elif any_toxiproxy.version_at_least(2, 6):
        pytest.skip(f"Toxiproxy 2.6.0 answers /version with invalid JSON (fixed in 2.7.0, #538): {body!r}")
    else:  # api.go before 2.6.0: the bare version string
        assert api.header("Content-Type") == "text/plain;charset=utf-8" and body == any_toxiproxy.version.encode()


def test_create_proxy_is_201_with_real_port_and_it_proxies(api: Api, toxiproxy_echo: EchoServer) -> None:
    body = _create(api, toxiproxy_echo)
    assert set(body) == PROXY_KEYS and body["Logger"] == {}
    assert body["enabled"] is True and body["toxics"] == [] and not body["listen"].endswith(":0")
    with connect(body["listen"]) as sock:
        sock.sendall(b"ping")
        assert sock.recv(4) == b"ping"


def test_create_errors_409_exists_400_missing_fields_and_bad_json(api: Api, toxiproxy_echo: EchoServer) -> None:
    _create(api, toxiproxy_echo)
    assert api.call("POST", "/proxies", {"name": "p", "upstream": toxiproxy_echo.addr}) == (
        409, {"error": "proxy already exists", "status": 409})
    assert api.call("POST", "/proxies", {"upstream": "127.0.0.1:1"}) == (
        400, {"error": "missing required field: name", "status": 400})
    assert api.call("POST", "/proxies", {"name": "q"})[1]["error"] == "missing required field: upstream"
    status, body = api.call("POST", "/proxies", raw=b"{not json")
    assert status == 400 and body["error"].startswith("bad request body")


def test_errors_are_json_in_go_http_error_framing_but_populate_answers_json(api: Api) -> None:
    status, body = api.call("GET", "/proxies/missing")
    assert (status, body) == (404, {"error": "proxy not found", "status": 404})
    assert api.header("Content-Type") == GO_HTTP_ERROR and api.header("X-Content-Type-Options") == "nosniff"
    assert api.raw.endswith(b"}\n")
    status, body = api.call("POST", "/populate", [{"name": "z"}])
    assert status == 400 and body["proxies"] is None
    assert api.header("Content-Type") == "application/json"


def test_create_disabled_proxy_does_not_listen(api: Api, toxiproxy_echo: EchoServer) -> None:
    body = _create(api, toxiproxy_echo, enabled=False)
    assert body["enabled"] is False


def test_create_on_a_busy_port_is_500(api: Api, toxiproxy_echo: EchoServer) -> None:
    status, body = api.call("POST", "/proxies", {"name": "x", "upstream": "127.0.0.1:1",
                                                  "listen": toxiproxy_echo.addr})
    assert status == 500 and body["status"] == 500


def test_list_and_show_proxies_200_and_404(api: Api, toxiproxy_echo: EchoServer) -> None:
    created = _create(api, toxiproxy_echo, name="client->1")
    assert api.call("GET", "/proxies") == (200, {"client->1": created})
    assert api.call("GET", "/proxies/client-%3E1") == (200, created)
    assert api.call("GET", "/proxies/missing") == (404, {"error": "proxy not found", "status": 404})


@pytest.mark.parametrize("method", ["POST", "PATCH"])
def test_update_proxy_by_post_or_patch_disables_and_reenables_on_same_port(
        api: Api, toxiproxy_echo: EchoServer, method: str) -> None:
    created = _create(api, toxiproxy_echo)
    if method == "PATCH" and not api.server.version_at_least(2, 6):
        assert api.call(method, "/proxies/p", {"enabled": False})[0] == 405
        pytest.skip(f"PATCH arrived in Toxiproxy 2.6.0 (CHANGELOG); {api.server.version} answers 405, checked")
    status, body = api.call(method, "/proxies/p", {"enabled": False})
    assert status == 200 and body["enabled"] is False
    host, port = created["listen"].rsplit(":", 1)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=2)
    status, body = api.call(method, "/proxies/p", {"enabled": True})
    assert status == 200 and body["enabled"] is True and body["listen"] == created["listen"]
    assert api.call(method, "/proxies/missing", {"enabled": True})[0] == 404


def test_update_proxy_upstream_moves_traffic(api: Api, toxiproxy_echo: EchoServer) -> None:
    _create(api, toxiproxy_echo, upstream="127.0.0.1:1")
    status, body = api.call(api.update, "/proxies/p", {"upstream": toxiproxy_echo.addr})
    assert status == 200 and body["upstream"] == toxiproxy_echo.addr
    with connect(body["listen"]) as sock:
        sock.sendall(b"x")
        assert sock.recv(1) == b"x"


def test_delete_proxy_204_then_404_and_port_closed(api: Api, toxiproxy_echo: EchoServer) -> None:
    created = _create(api, toxiproxy_echo)
    assert api.call("DELETE", "/proxies/p") == (204, b"")
    assert api.call("DELETE", "/proxies/p")[0] == 404
    host, port = created["listen"].rsplit(":", 1)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=2)


def test_populate_201_creates_keeps_identical_and_replaces_changed(api: Api, toxiproxy_echo: EchoServer) -> None:
    status, body = api.call("POST", "/populate", [
        {"name": "a", "upstream": toxiproxy_echo.addr, "listen": "127.0.0.1:0"},
        {"name": "b", "upstream": toxiproxy_echo.addr, "enabled": False},
    ])
    assert status == 201 and [p["name"] for p in body["proxies"]] == ["a", "b"]
    a = body["proxies"][0]
    with connect(a["listen"]) as live:
        status, body = api.call("POST", "/populate", [{"name": "a", "upstream": toxiproxy_echo.addr,
                                                       "listen": a["listen"]}])
        if api.server.version_at_least(2, 12):
            assert status == 201 and body["proxies"] == [a]
        else:  # before #631 (2.12.0) the answer is the never-started copy AddOrReplace dropped, not `a`
            assert status == 201 and body["proxies"] == [{**a, "enabled": False}]
        # Either way `a` itself was kept: still enabled, and a connection made before still works.
        assert api.call("GET", "/proxies/a") == (200, a)
        live.sendall(b"kept")
        assert live.recv(4) == b"kept"
    assert api.call("POST", "/populate", [{"name": "z"}]) == (
        400, {"error": "missing required field: upstream at proxy 1", "status": 400, "proxies": None})
    assert api.call("POST", "/populate", {"name": "z"})[0] == 400


def test_toxic_endpoints_and_status_codes(api: Api, toxiproxy_echo: EchoServer) -> None:
    _create(api, toxiproxy_echo)
    base = "/proxies/p/toxics"
    assert api.call("GET", base) == (200, [])
    status, toxic = api.call("POST", base, {"type": "latency", "attributes": {"latency": 10}})
    assert status == 200 and toxic == {"attributes": {"latency": 10, "jitter": 0}, "name": "latency_downstream",
                                       "type": "latency", "stream": "downstream", "toxicity": 1.0}
    assert api.call("POST", base, {"type": "latency"}) == (409, {"error": "toxic already exists", "status": 409})
    assert api.call("POST", base, {"type": "nope"})[1]["error"] == "invalid toxic type"
    assert api.call("POST", base, {"type": "latency", "stream": "x"})[0] == 400
    assert api.call("POST", base, {"type": "bandwidth", "attributes": {"rate": "fast"}})[0] == 400
    assert api.call("POST", "/proxies/missing/toxics", {"type": "latency"})[0] == 404
    up = api.call("POST", base, {"type": "bandwidth", "stream": "upstream", "name": "bw",
                                 "toxicity": 0.5, "attributes": {"rate": 100}})[1]
    # Toxiproxy lists upstream toxics first, then downstream ones.
    assert api.call("GET", base) == (200, [up, toxic])
    assert api.call("GET", "/proxies/p")[1]["toxics"] == [up, toxic]
    assert api.call("GET", f"{base}/bw") == (200, up)
    assert api.call("GET", f"{base}/missing") == (404, {"error": "toxic not found", "status": 404})
    status, body = api.call("POST", f"{base}/bw", {"attributes": {"rate": 200}})
    assert status == 200 and body["attributes"] == {"rate": 200} and body["toxicity"] == 0.5
    status, body = api.call(api.update, f"{base}/bw", {"toxicity": 1})
    assert status == 200 and body["toxicity"] == 1.0 and body["attributes"] == {"rate": 200}
    assert api.call(api.update, f"{base}/missing", {"toxicity": 1})[0] == 404
    status, body = api.call(api.update, f"{base}/bw", {"attributes": {"rate": -5}})
    if api.server.kind == "embedded":
        assert status == 400  # on purpose: see harness/toxiproxy/toxics.py
    else:  # Toxiproxy decodes attributes into the toxic as they come (toxic_collection.go UpdateToxicJson)
        assert status == 200 and body["attributes"] == {"rate": -5}
    assert api.call("DELETE", f"{base}/bw") == (204, b"")
    assert api.call("DELETE", f"{base}/bw")[0] == 404
    assert api.call("GET", base) == (200, [toxic])


def test_reset_204_enables_proxies_and_removes_toxics(api: Api, toxiproxy_echo: EchoServer) -> None:
    _create(api, toxiproxy_echo)
    api.call("POST", "/proxies/p/toxics", {"type": "timeout"})
    api.call("POST", "/proxies/p", {"enabled": False})
    assert api.call("POST", "/reset") == (204, b"")
    body = api.call("GET", "/proxies/p")[1]
    assert body["enabled"] is True and body["toxics"] == []
    with connect(body["listen"]) as sock:
        sock.sendall(b"ok")
        assert sock.recv(2) == b"ok"


def test_unknown_route_404_wrong_method_405_browser_403(api: Api) -> None:
    assert api.call("GET", "/nothing") == (404, b"404 page not found\n")
    assert api.header("Content-Type") == GO_HTTP_ERROR
    assert api.call("DELETE", "/proxies") == (405, b"")
    assert api.header("Content-Type") is None
    assert api.call("GET", "/reset")[0] == 405
    assert api.call("GET", "/version", headers={"User-Agent": "Mozilla/5.0"}) == (403, b"User agent not allowed\n")
    assert api.header("Content-Type") == GO_HTTP_ERROR


def test_expect_100_continue_and_chunked_bodies_as_curl_sends_them(any_toxiproxy: ToxiproxyUnderTest,
                                                                    toxiproxy_echo: EchoServer) -> None:
    body = json.dumps({"name": "c", "upstream": toxiproxy_echo.addr}).encode()
    with socket.create_connection((any_toxiproxy.host, any_toxiproxy.port), timeout=5) as sock:
        sock.sendall(b"POST /proxies HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                     b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
        interim = b""
        while not interim.endswith(b"\r\n\r\n"):
            interim += sock.recv(1)
        assert interim.startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body))
        reply = b""
        while piece := sock.recv(4096):
            reply += piece
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 201 Created") and json.loads(payload)["name"] == "c"
