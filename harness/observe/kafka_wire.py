"""A small blocking Kafka client for the observers that talk to single nodes (`quorum`, `kraft_metadata`):
`NodeConnection` is one TCP connection to one Kafka node, with ApiVersions on connect (the version of each
request is the highest both sides have), then framed requests encoded and decoded by kafka-python's protocol
classes, with short socket timeouts. A call that gets no usable answer raises `Unanswered` and closes the
connection; the next call reconnects. `error_name` gives Kafka's name for an error code.

On a secured listener (`ClientSecurity`) it also owns the connection's security: TLS (the run's CA, hostnames
checked) around the socket, and after ApiVersions the SASL exchange (SaslHandshake v1, then SaslAuthenticate
rounds) driven by kafka-python's own mechanism objects (SCRAM and PLAIN are kafka-python's, not ours).

confluent-kafka's AdminClient has no DescribeQuorum and no per-node addressing, hence this client.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import ssl
import struct
import time
from collections.abc import Callable
from typing import Any

import kafka.errors
from kafka.net.sasl import get_sasl_mechanism
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from harness.cluster.client_security import PLAINTEXT, ClientSecurity, Credentials
from harness.errors import HarnessError


class WireError(HarnessError):
    """A node's address is not host:port, or its SASL mechanism comes without a user."""


_SIZE = struct.Struct(">i")
_MAX_FRAME = 64 * 1024 * 1024
_KAFKA_NAMES = {-1: "UNKNOWN_SERVER_ERROR", 6: "NOT_LEADER_OR_FOLLOWER"}  # kafka-python: "UNKNOWN", pre-2.7 name


class Unanswered(HarnessError):
    """One call got no usable answer: refused, timed out, closed, bad frame, or no common API version."""

    def __init__(self, node: int, kind: str, detail: str) -> None:
        self.node, self.kind, self.detail = node, kind, detail
        super().__init__(f"node {node}: {kind}: {detail}")


def error_name(code: int) -> str | None:
    """Kafka's name for an error code (None for 0)."""
    if code == 0:
        return None
    if code in _KAFKA_NAMES:
        return _KAFKA_NAMES[code]
    cls = kafka.errors.kafka_errors.get(code)  # for_code() makes up an "UNKNOWN" class for codes it lacks
    name = getattr(cls, "message", None)
    return str(name) if name else f"ERROR_CODE_{code}"


def split_address(node: int, address: str) -> tuple[str, int]:
    host, sep, port = address.strip().rpartition(":")
    if not sep or not host or not port.isdigit():
        raise WireError(f"node {node} address {address!r} is not host:port")
    return host.strip("[]"), int(port)


class NodeConnection:
    """One blocking connection to one Kafka node; used by one thread at a time (close() from any)."""

    def __init__(self, node: int, address: str, *, timeout_s: float, client_id: str,
                 security: ClientSecurity = PLAINTEXT) -> None:
        if security.mechanism and security.user is None:
            raise WireError(f"node {node}: SASL {security.mechanism} needs a user")
        self.node = node
        self.host, self.port = split_address(node, address)
        self.security = security
        self.timeout_s = timeout_s
        self.client_id = client_id
        self.sock: socket.socket | None = None
        self.versions: dict[int, tuple[int, int]] = {}
        self.rtt_s: float | None = None
        self._corr = itertools.count(1)
        self._woken = False  # set by close(wake=True): calls fail at once until rearm()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def close(self, *, wake: bool = False) -> None:
        """Close the socket (never raises). `wake` shuts it down first, which unblocks a thread in recv(), and
        makes every later call fail at once until `rearm()`: a thread that was still connecting when the
        socket was closed does not go on to wait a whole timeout on a paused node."""
        if wake:
            self._woken = True  # set before reading self.sock: either we see its socket, or it sees the flag
        sock, self.sock = self.sock, None
        if sock is not None:
            with contextlib.suppress(OSError):
                if wake:  # the plain socket's shutdown: SSLSocket's own would also drop its TLS state under recv()
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    def rearm(self) -> None:
        """Allow calls again after close(wake=True)."""
        self._woken = False

    def call(self, request_cls: Any, response_cls: Any, newest: int, build: Callable[[int], Any]) -> Any:
        """The decoded answer to `build(version)`, version <= `newest`; raises `Unanswered` (and closes)."""
        try:
            if self._woken:
                raise Unanswered(self.node, "ConnectionClosed", f"{self.address}: closed (stopping)")
            if self.sock is None:
                self._connect()
            version = self._pick(request_cls, newest)
            return self._round_trip(build(version), response_cls, version)
        except Unanswered:
            self.close()
            raise
        except Exception as exc:  # OSError, timeouts, undecodable answers: no answer this time
            self.close()
            raise Unanswered(self.node, type(exc).__name__, f"{self.address}: {exc!r}") from exc

    def _connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        context = self.security.ssl_context()  # per connection: a CA file rewritten since is read again
        if context is not None:  # handshake below, once close(wake=True) can reach the socket
            sock = context.wrap_socket(sock, server_hostname=self.host, do_handshake_on_connect=False)
        self.sock = sock
        if self._woken:  # close(wake=True) ran while we were connecting
            raise Unanswered(self.node, "ConnectionClosed", f"{self.address}: closed while connecting")
        if isinstance(sock, ssl.SSLSocket):
            sock.do_handshake()
        answer = self._round_trip(ApiVersionsRequest(version=0), ApiVersionsResponse, 0)
        if answer.error_code:
            raise Unanswered(self.node, f"ApiVersions {error_name(answer.error_code)}", self.address)
        self.versions = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in answer.api_keys}
        if self.security.mechanism and self.security.user is not None:  # __init__ refused one without the other
            self._authenticate(self.security.mechanism, self.security.user)

    def _authenticate(self, name: str, user: Credentials) -> None:
        """SaslHandshake v1 (v0 would mean Kafka's pre-1.0 unframed tokens), then SaslAuthenticate rounds until
        kafka-python's mechanism is done; any refusal raises `Unanswered`."""
        auth_version = self._pick(SaslAuthenticateRequest, 2)
        if self._pick(SaslHandshakeRequest, 1) != 1:
            raise Unanswered(self.node, "UnsupportedVersion", f"{self.address} serves no SaslHandshake v1")
        shake = self._round_trip(SaslHandshakeRequest(version=1, mechanism=name), SaslHandshakeResponse, 1)
        if shake.error_code:
            raise Unanswered(self.node, f"SaslHandshake {error_name(shake.error_code)}",
                             f"{self.address} offers {list(shake.mechanisms)}, we asked for {name}")
        # kafka-python's config keys; security_protocol left out: it only logs "in the clear" at each connect
        mechanism = get_sasl_mechanism(name)(host=self.host, sasl_mechanism=name,
                                             sasl_plain_username=user.username, sasl_plain_password=user.password)
        while not mechanism.is_done():
            request = SaslAuthenticateRequest(version=auth_version, auth_bytes=mechanism.auth_bytes())
            answer = self._round_trip(request, SaslAuthenticateResponse, auth_version)
            if answer.error_code:
                raise Unanswered(self.node, f"SaslAuthenticate {error_name(answer.error_code)}",
                                 f"{self.address} as {user.username}: {answer.error_message}")
            try:
                mechanism.receive(bytes(answer.auth_bytes))
            except (ValueError, KeyError) as exc:  # SCRAM: a server proof that does not check out
                raise Unanswered(self.node, "SaslAuthenticationFailed", f"{self.address}: {exc!r}") from exc
        if not mechanism.is_authenticated():
            raise Unanswered(self.node, "SaslAuthenticationFailed", f"{self.address} as {user.username}: refused")

    def _pick(self, request_cls: Any, newest: int) -> int:
        theirs = self.versions.get(int(request_cls.API_KEY))
        ours = (int(request_cls.min_version), min(int(request_cls.max_version), newest))
        if theirs is None or max(ours[0], theirs[0]) > min(ours[1], theirs[1]):
            raise Unanswered(self.node, "UnsupportedVersion",
                             f"{self.address} serves {request_cls.__name__} versions {theirs}, we speak {ours}")
        return min(ours[1], theirs[1])

    def _read(self, sock: socket.socket, n: int) -> bytes:
        chunks: list[bytes] = []
        while n > 0:
            chunk = sock.recv(min(n, 1 << 20))
            if not chunk:
                raise Unanswered(self.node, "ConnectionClosed", f"{self.address} closed the connection")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def _round_trip(self, request: Any, response_cls: Any, version: int) -> Any:
        sock = self.sock
        if sock is None:
            raise Unanswered(self.node, "ConnectionClosed", f"{self.address}: not connected")
        corr = next(self._corr) % (2**31)
        request.with_header(correlation_id=corr, client_id=self.client_id)
        started = time.perf_counter()
        sock.sendall(bytes(request.encode(header=True, framed=True)))
        size = _SIZE.unpack(self._read(sock, 4))[0]
        if not 4 <= size <= _MAX_FRAME:
            raise Unanswered(self.node, "BadFrame", f"{self.address} sent a frame of {size} bytes")
        data = self._read(sock, size)
        self.rtt_s = time.perf_counter() - started
        got = _SIZE.unpack_from(data)[0]
        if got != corr:
            raise Unanswered(self.node, "BadFrame", f"{self.address} answered correlation id {got}, expected {corr}")
        return response_cls.decode(data, version=version, header=True)
