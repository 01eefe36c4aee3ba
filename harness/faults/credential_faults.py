"""Faults on credentials: `credential_rotation` changes the SCRAM password of the user the workloads connect as
(`client`, `harness.cluster.security`) for the fault's duration, as an operator rotating a password does before
the clients have the new one; the heal sets the old password back. It goes through the admin's
AlterUserScramCredentials (KIP-554) with confluent-kafka's AdminClient.

What Kafka does (docs/kafka-behaviour.md, "Secured clusters"): a connection authenticates once, when it opens, so
the clients' open connections go on working; every new connection with the old password fails
(SaslAuthenticationException, librdkafka's `SASL authentication error`), until the heal. Kafka re-authenticates an
open connection only when `connections.max.reauth.ms` is set (KIP-368; 0, never, by default).

Its effect: the producers and consumer members it names as `target` (all of the workloads share the user); nothing
is down or cut."""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, cast

from harness.cluster.base import client_access
from harness.cluster.client_security import ClientSecurity
from harness.cluster.security import SCRAM_ITERATIONS
from harness.errors import HarnessError
from harness.faults.kind import Applied, FaultEnv, KindSpec, attempt, effect
from harness.faults.resolve import resolve_node
from harness.workload.common import LIBRDKAFKA_LOGGER

if TYPE_CHECKING:
    from harness.faults.schedule import PlannedFault

TIMEOUT_S = 30.0


def _accounts(env: FaultEnv) -> tuple[ClientSecurity, ClientSecurity]:
    """(the admin's access, the workloads' access) of a cluster whose workloads authenticate with SCRAM."""
    client = client_access(env.cluster, "client")
    if client.user is None or not (client.mechanism or "").startswith("SCRAM"):
        raise HarnessError("credential_rotation changes a SCRAM password: the cluster needs cluster.security.sasl "
                           "scram-sha-512")
    return client_access(env.cluster, "admin"), client


def set_password(admin: ClientSecurity, bootstrap_servers: str, user: ClientSecurity, password: str) -> None:
    """Upsert `user`'s SCRAM credential with `password` through the admin (AlterUserScramCredentials)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    assert user.user is not None and user.mechanism is not None
    mechanism = ScramMechanism[user.mechanism.replace("-", "_")]
    upsert = UserScramCredentialUpsertion(user.user.username, ScramCredentialInfo(mechanism, SCRAM_ITERATIONS),
                                          password.encode(), secrets.token_bytes(16))
    client = AdminClient(cast(dict[str, Any], {"bootstrap.servers": bootstrap_servers, "logger": LIBRDKAFKA_LOGGER,
                                               **admin.librdkafka()}))
    deadline = time.monotonic() + TIMEOUT_S
    try:
        while True:
            try:
                for future in client.alter_user_scram_credentials([upsert], request_timeout=TIMEOUT_S).values():
                    future.result(timeout=TIMEOUT_S)
                return
            except KafkaException as exc:  # NOT_CONTROLLER right after a controller failover: asked again
                err = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
                again = err is not None and (err.retriable() or err.code() == KafkaError.NOT_CONTROLLER)
                if not again or time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)
    finally:
        client.poll(0)  # hands the queued log lines to the logger (the run's clients.log)


@dataclass(frozen=True, slots=True)
class CredentialRotation:
    """Change the workloads' SCRAM password to a new random one; heal: set the old one back."""

    spec: KindSpec

    def apply(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> None:
        assert fault.target is not None
        admin, client = _accounts(env)
        done.targets.append(str(fault.target))
        done.nodes.append(resolve_node(fault.target, env.state, env.topology))
        set_password(admin, env.cluster.bootstrap_servers, client, secrets.token_urlsafe(18))

    def heal(self, env: FaultEnv, done: Applied) -> list[tuple[str, BaseException]]:
        admin, client = _accounts(env)
        assert client.user is not None
        return attempt([(f"set the SCRAM password of user {client.user.username!r} back", lambda: set_password(
            admin, env.cluster.bootstrap_servers, client, client.user.password if client.user else ""))])

    def describe(self, fault: PlannedFault, done: Applied) -> dict[str, Any]:
        return effect(nodes=done.nodes)


CREDENTIAL_KINDS: tuple[CredentialRotation, ...] = (
    CredentialRotation(KindSpec(
        "credential_rotation", "Change the SCRAM password of the user the workloads connect as (cluster.security "
        "with sasl: scram-sha-512), as an operator rotating it: open connections go on, new ones fail to "
        "authenticate until the heal.",
        frozenset({"producer", "consumer"}), (), "required", "credentials", "sets the old password back",
        MappingProxyType({"process": "AlterUserScramCredentials through the admin (the run's secured cluster)",
                          "containers": "AlterUserScramCredentials through the admin (the local Kafka image)"}))),
)
"""The credential kinds, in `kafka-chaos faults` order."""
