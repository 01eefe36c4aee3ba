"""A secured cluster's side of `cluster.security` (each client's side is `harness.cluster.client_security`): the
per-run TLS material, the SASL users, every node's security properties, the SCRAM credentials' bootstrap and the
ACLs of the workloads' user. docs/kafka-behaviour.md "Secured clusters" cites Kafka's docs for each setting.

- **Certificates** (`issue`): trustme makes a CA for the run, one certificate per broker and KRaft controller, and
  one for clients, each for 127.0.0.1 and localhost. Every Kafka client checks the server's hostname by default
  (`ssl.endpoint.identification.algorithm=https`), and every connection goes to 127.0.0.1 (a proxy, which passes
  the TLS bytes untouched, or the node itself), so the check holds through the proxies. On the containers backend
  the certificates also name what the nodes dial inside the network (`toxiproxy`, the node aliases) and the
  engine's host address. A node's key and chain
  are one PEM file (KIP-651's PEM key store, Kafka 2.7+), its key unencrypted PKCS#8, readable by the owner only.
- **Users**: `admin` (the brokers among themselves and with the controllers, and the harness's observers,
  operators and tools; the super user when the authorizer is on) and `client` (the workloads), each with a
  random password per run. SCRAM credentials are created as Kafka's docs say for each mode: in ZooKeeper before
  the brokers start (`kafka-configs --zookeeper ... --add-config SCRAM-SHA-512=[...]`, `zookeeper_scram_args`),
  in KRaft when the log directories are formatted (`kafka-storage format --add-scram`, `format_scram_args`).
- **Listeners** (`node_properties`): every data listener (each `FROM<k>` and `EXTERNAL`) speaks the run's protocol
  and mechanism. KRaft's controller listeners speak the same protocol with SASL/PLAIN whatever the data listeners
  use: SCRAM credentials live in the metadata log, which a controller has not read when the first connections
  to it are authenticated.
- **Authorizer** (`authorizer: true`): ZooKeeper mode's `AclAuthorizer` or KRaft's `StandardAuthorizer`, `admin`
  as the super user, and `client` allowed everything on every topic, group and transactional id and idempotent
  writes on the cluster (`client_acls`), so the workloads run as an ordinary principal.
"""

from __future__ import annotations

import logging
import os
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from harness.cluster.base import SecuritySpec
from harness.cluster.client_security import (
    MECHANISMS,
    PLAINTEXT,
    ClientSecurity,
    ClientUser,
    Credentials,
    Protocol,
    jaas_line,
)
from harness.history.nodes import NodeId

HOSTS = ("127.0.0.1", "localhost")
CONTROLLER_MECHANISM = "PLAIN"
SCRAM_ITERATIONS = 4096
AUTHORIZERS = {False: "kafka.security.authorizer.AclAuthorizer",
               True: "org.apache.kafka.metadata.authorizer.StandardAuthorizer"}
"""KRaft -> the authorizer class Kafka's docs name for the mode."""
SUPER_USER = "User:admin"
_QUIET = logging.getLogger("kafka_chaos.cluster.acls")
"""The ACL client's librdkafka log (never stderr; a failure is raised with its error)."""


@dataclass(frozen=True, slots=True)
class ClusterSecurity:
    """One run's security: what the spec asked, where the material is, and the two users."""

    spec: SecuritySpec
    kraft: bool
    directory: Path
    admin: Credentials
    client: Credentials

    @property
    def ca_file(self) -> Path:
        return self.directory / "ca.pem"

    def keystore(self, node: NodeId) -> Path:
        return self.directory / f"{node.role}-{node.id}.pem"

    @property
    def mechanism(self) -> str | None:
        return MECHANISMS[self.spec.sasl] if self.spec.sasl else None

    @property
    def protocol(self) -> Protocol:
        if self.spec.sasl is not None:
            return "SASL_SSL" if self.spec.tls else "SASL_PLAINTEXT"
        return "SSL" if self.spec.tls else "PLAINTEXT"

    def access(self, user: ClientUser, *, controllers: bool = False) -> ClientSecurity:
        """How `user` connects: to the brokers, or with `controllers` to the KRaft controllers' own listeners (the
        same protocol, every listener has it; SASL/PLAIN there)."""
        creds = self.admin if user == "admin" else self.client
        mechanism = CONTROLLER_MECHANISM if controllers and self.mechanism else self.mechanism
        return ClientSecurity(self.protocol, str(self.ca_file) if self.spec.tls else None, mechanism,
                              creds if mechanism else None)

    def node_properties(self, node: NodeId, listeners: Sequence[str], controller_listeners: Sequence[str]) -> \
            dict[str, str]:
        """`node`'s security properties: its TLS stores, a JAAS entry per listener (`listeners`: the data listeners,
        none on a dedicated controller; `controller_listeners`: the KRaft controller listeners it has or dials),
        and the authorizer."""
        props: dict[str, str] = {}
        if self.spec.tls:
            props |= {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(self.keystore(node)),
                      "ssl.truststore.type": "PEM", "ssl.truststore.location": str(self.ca_file)}
        mech = self.mechanism
        if mech is not None:
            if listeners:
                props |= {"sasl.enabled.mechanisms": mech, "sasl.mechanism.inter.broker.protocol": mech}
            plain_users = f' user_admin="{self.admin.password}" user_client="{self.client.password}"'
            entry = jaas_line(mech, self.admin, plain_users if mech == "PLAIN" else "")
            for name in listeners:
                props[f"listener.name.{name.lower()}.{mech.lower()}.sasl.jaas.config"] = entry
            if controller_listeners:
                props["sasl.mechanism.controller.protocol"] = CONTROLLER_MECHANISM
                ctrl = jaas_line(CONTROLLER_MECHANISM, self.admin, f' user_admin="{self.admin.password}"')
                for name in controller_listeners:
                    props[f"listener.name.{name.lower()}.sasl.enabled.mechanisms"] = CONTROLLER_MECHANISM
                    props[f"listener.name.{name.lower()}.{CONTROLLER_MECHANISM.lower()}.sasl.jaas.config"] = ctrl
        if self.spec.authorizer:
            props |= {"authorizer.class.name": AUTHORIZERS[self.kraft], "super.users": SUPER_USER}
        return props

    def scram_users(self) -> tuple[Credentials, ...]:
        """The users that need SCRAM credentials (none with PLAIN or without SASL)."""
        return (self.admin, self.client) if self.mechanism and self.mechanism.startswith("SCRAM") else ()

    def format_scram_args(self) -> list[str]:
        """KRaft: `kafka-storage format`'s `--add-scram` arguments (Kafka 3.5+), one per user."""
        out: list[str] = []
        for user in self.scram_users():
            out += ["--add-scram", f"{self.mechanism}=[name={user.username},password={user.password}]"]
        return out

    def zookeeper_scram_args(self, zookeeper_connect: str) -> list[list[str]]:
        """ZooKeeper mode: one `kafka.admin.ConfigCommand` argument list per user, to run before the brokers start
        (inter-broker SASL needs the admin's credential in ZooKeeper first)."""
        return [["kafka.admin.ConfigCommand", "--zookeeper", zookeeper_connect, "--alter", "--add-config",
                 f"{self.mechanism}=[iterations={SCRAM_ITERATIONS},password={user.password}]",
                 "--entity-type", "users", "--entity-name", user.username] for user in self.scram_users()]

    def describe(self) -> dict[str, object]:
        """For `cluster.json`: the protocol, the mechanism, the authorizer, the CA and the tools' properties file."""
        return {"protocol": self.protocol, "mechanism": self.mechanism, "authorizer": self.spec.authorizer,
                "ca_file": str(self.ca_file), "admin_properties": str(self.tool_properties())}

    def tool_properties(self) -> Path:
        """The admin's client properties for Kafka's own tools (`--command-config`), written once."""
        path = self.directory / "admin.properties"
        if not path.exists():
            _write_private(path, "".join(f"{k}={v}\n" for k, v in sorted(self.access("admin").java().items())))
        return path


def access(security: ClusterSecurity | None, user: ClientUser, *, controllers: bool = False) -> ClientSecurity:
    """How `user` connects to a cluster with `security` (`ClusterSecurity.access`); `PLAINTEXT` without."""
    return security.access(user, controllers=controllers) if security is not None else PLAINTEXT


def issue(spec: SecuritySpec, directory: Path, nodes: Iterable[NodeId], *, kraft: bool,
          hosts: Sequence[str] = ()) -> ClusterSecurity:
    """Make the run's CA, a certificate per broker and controller of `nodes` and one for clients under `directory`,
    and two users with fresh passwords. Every certificate names `HOSTS` and `hosts` (the containers backend's names
    inside its network, where the nodes dial one another through the `toxiproxy` container)."""
    import trustme  # only secured runs pay for it (it loads cryptography)
    from cryptography.hazmat.primitives import serialization

    directory.mkdir(parents=True, exist_ok=True)
    os.chmod(directory, 0o700)
    ca = trustme.CA(organization_name="kafka-chaos run")
    (directory / "ca.pem").write_bytes(ca.cert_pem.bytes())
    security = ClusterSecurity(spec, kraft, directory, Credentials("admin", secrets.token_urlsafe(18)),
                               Credentials("client", secrets.token_urlsafe(18)))
    for name, target in [*((str(n), security.keystore(n)) for n in nodes if n.role != "zookeeper"),
                         ("client", directory / "client.pem")]:
        cert = ca.issue_cert(*dict.fromkeys((*HOSTS, *hosts)), common_name=name)
        key = serialization.load_pem_private_key(cert.private_key_pem.bytes(), password=None)
        pkcs8 = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption())  # Kafka's PEM store reads PKCS#8 only
        _write_private(target, pkcs8.decode() + "".join(blob.bytes().decode() for blob in cert.cert_chain_pems))
    return security


def _write_private(path: Path, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)


def client_acls(admin_config: dict[str, str | int | float | bool], user: str, timeout_s: float) -> None:
    """Allow `user` everything on every topic, group and transactional id, and idempotent writes (the workloads'
    principal under the authorizer), through confluent-kafka's AdminClient as the admin."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    principal = f"User:{user}"
    bindings = [AclBinding(kind, "*", ResourcePatternType.LITERAL, principal, "*", AclOperation.ALL,
                           AclPermissionType.ALLOW)
                for kind in (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.TRANSACTIONAL_ID)]
    bindings.append(AclBinding(ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, principal, "*",
                               AclOperation.IDEMPOTENT_WRITE, AclPermissionType.ALLOW))
    admin = AdminClient(cast(dict[str, Any], {"logger": _QUIET, **admin_config}))
    try:
        for future in admin.create_acls(bindings, request_timeout=timeout_s).values():
            future.result(timeout=timeout_s)
    finally:
        admin.poll(0)
