"""How a client speaks to a secured cluster (`cluster.security`): `ClientSecurity`, the one value every client of
the harness receives (workloads, observers, operators, the readiness probe, Kafka's own tools), and its settings
in each client library's own names:
- librdkafka (confluent-kafka): `security.protocol`, `ssl.ca.location`, `sasl.mechanisms`, `sasl.username`,
  `sasl.password`;
- the Java client: `security.protocol`, a PEM trust store (`ssl.truststore.type=PEM`, KIP-651), `sasl.mechanism`
  and `sasl.jaas.config`;
- kafka-python: `security_protocol`, `ssl_cafile`, `sasl_mechanism`, `sasl_plain_username`/`sasl_plain_password`;
- the observers' own wire client (`harness.observe.kafka_wire`): an `ssl.SSLContext` and the SASL mechanism.

`PLAINTEXT` is a cluster without security: every mapping is empty, so a client's own settings are unchanged.
Passwords never appear in a `repr`. The cluster's side (certificates, users, broker properties) is
`harness.cluster.security`'s.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field, replace
from typing import Any, Literal

SaslName = Literal["scram-sha-512", "plain"]
Protocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
ClientUser = Literal["admin", "client"]
"""`admin`: the harness's observers, operators and Kafka's tools (and the brokers among themselves), a super user
when the authorizer is on; `client`: the workloads."""
MECHANISMS: dict[str, str] = {"scram-sha-512": "SCRAM-SHA-512", "plain": "PLAIN"}
"""`cluster.security.sasl` -> Kafka's mechanism name."""
LOGIN_MODULES = {"SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
                 "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule"}


@dataclass(frozen=True, slots=True)
class Credentials:
    """A SASL user and its password (kept out of `repr`)."""

    username: str
    password: str = field(repr=False)


def jaas_line(mechanism: str, user: Credentials, extra: str = "") -> str:
    """A `sasl.jaas.config` value: the mechanism's login module with `user`'s name and password (and `extra`,
    the `user_<name>="<password>"` entries a PLAIN server checks against)."""
    return (f'{LOGIN_MODULES[mechanism]} required username="{user.username}" password="{user.password}"'
            f'{extra};')


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """What one client needs to connect: the protocol, the CA file that signed the brokers' certificates (TLS), and
    the SASL mechanism with the user's credentials (SASL)."""

    protocol: Protocol = "PLAINTEXT"
    ca_file: str | None = None
    mechanism: str | None = None
    """Kafka's name: `SCRAM-SHA-512` or `PLAIN`."""
    user: Credentials | None = None

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def secured(self) -> bool:
        return self.protocol != "PLAINTEXT"

    def with_password(self, password: str) -> ClientSecurity:
        """The same client with another password (after `credential_rotation`)."""
        if self.user is None:
            raise ValueError("a client without a SASL user has no password to change")
        return replace(self, user=Credentials(self.user.username, password))

    def librdkafka(self) -> dict[str, str]:
        if not self.secured:
            return {}
        out = {"security.protocol": self.protocol.lower()}
        if self.ca_file:
            out["ssl.ca.location"] = self.ca_file
        if self.mechanism and self.user is not None:
            out |= {"sasl.mechanisms": self.mechanism, "sasl.username": self.user.username,
                    "sasl.password": self.user.password}
        return out

    def java(self) -> dict[str, str]:
        if not self.secured:
            return {}
        out: dict[str, str] = {"security.protocol": self.protocol}
        if self.ca_file:
            out |= {"ssl.truststore.type": "PEM", "ssl.truststore.location": self.ca_file}
        if self.mechanism and self.user is not None:
            out |= {"sasl.mechanism": self.mechanism, "sasl.jaas.config": jaas_line(self.mechanism, self.user)}
        return out

    def kafka_python(self) -> dict[str, Any]:
        if not self.secured:
            return {}
        out: dict[str, Any] = {"security_protocol": self.protocol}
        if self.ca_file:
            out["ssl_cafile"] = self.ca_file
        if self.mechanism and self.user is not None:
            out |= {"sasl_mechanism": self.mechanism, "sasl_plain_username": self.user.username,
                    "sasl_plain_password": self.user.password}
        return out

    def ssl_context(self) -> ssl.SSLContext | None:
        """A client TLS context trusting the run's CA (hostnames checked, as every Kafka client does by default);
        None without TLS."""
        if not self.tls:
            return None
        return ssl.create_default_context(cafile=self.ca_file)


PLAINTEXT = ClientSecurity()
"""A cluster without security."""
