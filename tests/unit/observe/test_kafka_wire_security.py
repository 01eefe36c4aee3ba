"""`NodeConnection` on secured listeners, against a FAKE broker: an in-process server on 127.0.0.1 (Python's `ssl`
with a certificate from a `trustme` CA) that stands in for a Kafka broker and answers ApiVersions, SaslHandshake
and SaslAuthenticate with kafka-python's own response classes. It checks what our client sends (TLS first, then
ApiVersions, SaslHandshake, the mechanism's tokens from kafka-python) and how refusals surface (`Unanswered`);
it does not check Kafka itself: the real path is tested elsewhere against Apache Kafka."""

from __future__ import annotations

import socket
import ssl
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse
from kafka.protocol.sasl import (
    SaslAuthenticateRequest,
    SaslAuthenticateResponse,
    SaslHandshakeRequest,
    SaslHandshakeResponse,
)

from harness.cluster.client_security import ClientSecurity, Credentials
from harness.observe.kafka_wire import NodeConnection, Unanswered, error_name
from harness.waiting import wait_until
from tests.fixtures.wire import FakeServer, read_frame

_API_VERSIONS = {18: (0, 0), 17: (0, 1), 36: (0, 2)}
_PRE_AUTH = {18, 17, 36}  # what a SASL listener serves before authentication
_PASSWORD = "s3cret"


def _ask_versions(conn: NodeConnection) -> Any:
    return conn.call(ApiVersionsRequest, ApiVersionsResponse, 0, lambda v: ApiVersionsRequest(version=v))


class FakeBroker(FakeServer):
    """A fake standing in for a Kafka broker (not Kafka): TLS when given a server context, SASL PLAIN checked
    against user "alice" / `_PASSWORD`, SCRAM refused at its first token (this fake has no SCRAM server). Records
    each connection's api keys and SASL tokens; `silent_after_auth` reads later requests and never answers;
    `plain_reply` is the server's token after a good PLAIN password (Kafka's is empty)."""

    def __init__(self, tls: ssl.SSLContext | None, *, silent_after_auth: bool = False,
                 plain_reply: bytes = b"") -> None:
        super().__init__()
        self.tls = tls
        self.plain_reply = plain_reply
        self.silent_after_auth = silent_after_auth
        self.keys: list[list[int]] = []
        self.tokens: list[bytes] = []
        self.mechanisms: list[str] = []
        self.start()

    def seen(self) -> list[list[int]]:
        with self._lock:
            return [list(k) for k in self.keys]

    def serve(self, raw: socket.socket) -> None:
        keys: list[int] = []
        with self._lock:
            self.keys.append(keys)
        conn = raw
        try:
            if self.tls is not None:
                conn = self.tls.wrap_socket(raw, server_side=True)
                self.track(conn)
            authenticated = False
            while True:
                data = read_frame(conn)
                key, version, corr = struct.unpack_from(">hhi", data)
                with self._lock:
                    keys.append(key)
                if key not in _PRE_AUTH and not authenticated:
                    return  # as Kafka does: anything else before SASL closes the connection
                if authenticated and self.silent_after_auth:
                    continue
                response, authenticated = self._answer(key, version, data, authenticated)
                response.with_header(correlation_id=corr)
                conn.sendall(bytes(response.encode(header=True, framed=True)))
        except (EOFError, OSError):
            pass
        finally:
            conn.close()

    def _answer(self, key: int, version: int, data: bytes, authenticated: bool) -> tuple[Any, bool]:
        if key == 18:
            return ApiVersionsResponse(version=0, error_code=0, api_keys=[
                ApiVersionsResponse.ApiVersion(api_key=k, min_version=lo, max_version=hi)
                for k, (lo, hi) in _API_VERSIONS.items()]), authenticated
        if key == 17:
            mechanism = SaslHandshakeRequest.decode(data, version=version, header=True).mechanism
            with self._lock:
                self.mechanisms.append(mechanism)
            offered = ["PLAIN", "SCRAM-SHA-512"]
            return SaslHandshakeResponse(version=version, error_code=0 if mechanism in offered else 33,
                                         mechanisms=offered), False
        token = bytes(SaslAuthenticateRequest.decode(data, version=version, header=True).auth_bytes)
        with self._lock:
            self.tokens.append(token)
            mechanism = self.mechanisms[-1]
        ok = mechanism == "PLAIN" and token.split(b"\0")[1:] == [b"alice", _PASSWORD.encode()]
        return SaslAuthenticateResponse(
            version=version, error_code=0 if ok else 58, auth_bytes=self.plain_reply, session_lifetime_ms=0,
            error_message=None if ok else "Authentication failed: Invalid username or password"), ok


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_file(ca: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


def server_context(ca: trustme.CA, *names: str) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*(names or ("127.0.0.1", "localhost"))).configure_cert(context)
    return context


@pytest.fixture
def fakes() -> Iterator[list[FakeBroker]]:
    made: list[FakeBroker] = []
    yield made
    for fake in made:
        fake.close()


def start(fakes: list[FakeBroker], tls: ssl.SSLContext | None, **kwargs: Any) -> FakeBroker:
    fakes.append(FakeBroker(tls, **kwargs))
    return fakes[-1]


def sasl_ssl(ca_file: str, mechanism: str = "PLAIN", password: str = _PASSWORD) -> ClientSecurity:
    return ClientSecurity("SASL_SSL", ca_file, mechanism, Credentials("alice", password))


def test_plaintext_speaks_neither_tls_nor_sasl_to_a_fake_broker(fakes: list[FakeBroker]) -> None:
    fake = start(fakes, None)
    conn = NodeConnection(1, fake.address, timeout_s=5.0, client_id="plain-test")
    assert _ask_versions(conn).error_code == 0
    assert not isinstance(conn.sock, ssl.SSLSocket)
    assert fake.seen() == [[18, 18]] and fake.tokens == []
    conn.close()


def test_sasl_plain_over_tls_sends_kafka_pythons_plain_token_to_a_fake_broker(
        fakes: list[FakeBroker], ca: trustme.CA, ca_file: str) -> None:
    """TLS with hostname checking, then ApiVersions, SaslHandshake(PLAIN), one SaslAuthenticate carrying RFC 4616's
    `authzid \\0 user \\0 password` (kafka-python repeats the user as authzid), then ordinary calls."""
    fake = start(fakes, server_context(ca))
    conn = NodeConnection(1, fake.address, timeout_s=5.0, client_id="plain-sasl-test", security=sasl_ssl(ca_file))
    assert _ask_versions(conn).error_code == 0
    assert isinstance(conn.sock, ssl.SSLSocket)
    assert fake.mechanisms == ["PLAIN"]
    assert fake.tokens == [b"alice\0alice\0" + _PASSWORD.encode()]
    assert fake.tokens[0].endswith(b"\0alice\0" + _PASSWORD.encode())
    assert fake.seen() == [[18, 17, 36, 18]]
    assert conn.versions[36] == (0, 2)
    conn.close()


def test_a_wrong_password_is_unanswered_and_closes_against_a_fake_broker(
        fakes: list[FakeBroker], ca: trustme.CA, ca_file: str) -> None:
    fake = start(fakes, server_context(ca))
    conn = NodeConnection(1, fake.address, timeout_s=5.0, client_id="bad-password-test",
                          security=sasl_ssl(ca_file, password="not-the-password"))
    with pytest.raises(Unanswered, match="Invalid username or password") as raised:
        _ask_versions(conn)
    assert raised.value.kind == "SaslAuthenticate SASL_AUTHENTICATION_FAILED"
    assert conn.sock is None
    assert fake.seen() == [[18, 17, 36]]  # nothing asked after the refusal
    assert "not-the-password" not in str(raised.value)


def test_a_plain_answer_kafka_python_does_not_accept_is_unanswered_against_a_fake_broker(
        fakes: list[FakeBroker], ca: trustme.CA, ca_file: str) -> None:
    """No error code, but a non-empty server token: kafka-python's PLAIN says not authenticated, and so do we."""
    fake = start(fakes, server_context(ca), plain_reply=b"unexpected")
    conn = NodeConnection(1, fake.address, timeout_s=5.0, client_id="plain-reply-test", security=sasl_ssl(ca_file))
    with pytest.raises(Unanswered) as raised:
        _ask_versions(conn)
    assert raised.value.kind == "SaslAuthenticationFailed"
    assert conn.sock is None and fake.seen() == [[18, 17, 36]]


def test_scram_tokens_come_from_kafka_python_and_a_refusal_is_unanswered_against_a_fake_broker(
        fakes: list[FakeBroker], ca: trustme.CA, ca_file: str) -> None:
    """The fake has no SCRAM server: it refuses the client-first message, which is kafka-python's."""
    fake = start(fakes, server_context(ca))
    conn = NodeConnection(1, fake.address, timeout_s=5.0, client_id="scram-test",
                          security=sasl_ssl(ca_file, "SCRAM-SHA-512"))
    with pytest.raises(Unanswered, match="SASL_AUTHENTICATION_FAILED"):
        _ask_versions(conn)
    assert fake.mechanisms == ["SCRAM-SHA-512"]
    assert len(fake.tokens) == 1 and fake.tokens[0].startswith(b"n,,n=alice,r=")


def test_a_mechanism_the_fake_broker_does_not_offer_is_unanswered(
        fakes: list[FakeBroker], ca: trustme.CA, ca_file: str) -> None:
    fake = start(fakes, server_context(ca))
    conn = NodeConnection(1, fake.address, timeout_s=5.0, client_id="mechanism-test",
                          security=sasl_ssl(ca_file, "SCRAM-SHA-256"))
    with pytest.raises(Unanswered, match="offers") as raised:
        _ask_versions(conn)
    assert raised.value.kind == "SaslHandshake UNSUPPORTED_SASL_MECHANISM"
    assert fake.tokens == []


def test_a_certificate_for_another_host_is_refused_by_a_fake_brokers_client(
        fakes: list[FakeBroker], ca: trustme.CA, ca_file: str) -> None:
    """Hostname checking is on: the fake's certificate names another host, so the client never sends a byte."""
    fake = start(fakes, server_context(ca, "elsewhere.example"))
    conn = NodeConnection(1, fake.address, timeout_s=5.0, client_id="hostname-test",
                          security=ClientSecurity("SSL", ca_file))
    with pytest.raises(Unanswered) as raised:
        _ask_versions(conn)
    assert raised.value.kind == "SSLCertVerificationError"
    assert conn.sock is None


@pytest.mark.timeout(60)
def test_wake_unblocks_a_recv_on_a_tls_socket_of_a_fake_paused_broker(
        fakes: list[FakeBroker], ca: trustme.CA, ca_file: str) -> None:
    """After authentication the fake reads and never answers (a SIGSTOPped broker); close(wake=True) from another
    thread ends the caller's 30 s wait at once."""
    fake = start(fakes, server_context(ca), silent_after_auth=True)
    conn = NodeConnection(1, fake.address, timeout_s=30.0, client_id="wake-tls-test", security=sasl_ssl(ca_file))
    outcome: list[BaseException] = []

    def ask() -> None:
        try:
            _ask_versions(conn)
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    caller = threading.Thread(target=ask, daemon=True)
    caller.start()
    wait_until("the fake to receive the call after SASL", lambda: fake.seen() == [[18, 17, 36, 18]], 10.0)
    started = time.monotonic()
    conn.close(wake=True)
    caller.join(10.0)
    assert not caller.is_alive()
    assert time.monotonic() - started < 10.0
    assert len(outcome) == 1 and isinstance(outcome[0], Unanswered)
    assert conn.sock is None


def test_error_name_gives_kafkas_names_for_the_sasl_refusals() -> None:
    assert [error_name(c) for c in (0, -1, 6, 33, 58, 9999)] == [
        None, "UNKNOWN_SERVER_ERROR", "NOT_LEADER_OR_FOLLOWER", "UNSUPPORTED_SASL_MECHANISM",
        "SASL_AUTHENTICATION_FAILED", "ERROR_CODE_9999"]
