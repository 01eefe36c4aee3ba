"""The real `Operator`: operations on a running cluster through Kafka's admin APIs.

- reassign: AlterPartitionReassignments (KIP-455, Kafka 2.4+; a broker that does not advertise it in
  ApiVersions gets an error outcome). confluent-kafka has no binding for the reassignment APIs, so this
  uses kafka-python's `KafkaAdminClient` (already a dependency: the observers decode Kafka's wire format
  with it). Done means: no reassignment of those partitions pending (ListPartitionReassignments) and
  Metadata lists the new replicas in their order. A request whose answer was lost is sent again only when
  ListPartitionReassignments and Metadata show it did not go through (`_in_place`).
- elect_preferred: ElectLeaders (type PREFERRED) through confluent-kafka's AdminClient. Per-partition
  answers (`ELECTION_NOT_NEEDED`, `PREFERRED_LEADER_NOT_AVAILABLE`) are results, not failures.
- add_partitions: CreatePartitions through confluent-kafka's AdminClient; done when Metadata shows the new
  count with a leader for every partition. Kafka's "Topic already has <count> partitions." to a retry after
  a lost answer means the first request went through; any other INVALID_PARTITIONS (more partitions than
  asked, which a broker's stale Metadata may have hidden) is an error.
- rolling_restart (the stops and starts are the fault injector's): `await_in_sync` polls Metadata until the
  broker is registered and no partition is under-replicated (ISR = replicas).

Errors while waiting (a broker killed in the middle) are retried until the timeout; the outcome then
says what was awaited and what was seen last."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, cast

from harness.cluster.client_security import PLAINTEXT, ClientSecurity
from harness.faults.outcomes import OperationOutcome, PartitionOutcome
from harness.workload.common import LIBRDKAFKA_LOGGER

ALTER_PARTITION_REASSIGNMENTS = 45
NOT_CONTROLLER = 41
POLL_S = 0.5
ELECT_ATTEMPT_S = 10.0
"""One ElectLeaders attempt's socket timeout; attempts repeat until the operation's timeout."""


class KafkaOperator:
    """Operations through `bootstrap_servers`. Each operation makes its own clients and closes them when it
    ends, so operations may run side by side."""

    def __init__(self, bootstrap_servers: str, voters: Mapping[int, str] | None = None, *,
                 security: ClientSecurity = PLAINTEXT, voter_security: ClientSecurity = PLAINTEXT,
                 brokers: Mapping[int, str] | None = None) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.voters = dict(voters or {})
        """KRaft: each voter's controller listener, for `await_voter`."""
        self.brokers = dict(brokers or {})
        """Each broker's own client address, for `await_brokers_follow_kraft`."""
        self.security, self.voter_security = security, voter_security
        """How the operator's clients connect to the brokers and to the voters (the admin's access on a secured
        cluster)."""

    # -- reassign --------------------------------------------------------------------------------

    def reassign(self, topic: str, replicas: Mapping[int, Sequence[int]], timeout_s: float) -> OperationOutcome:
        admin = _FreshClient(self.bootstrap_servers, self.security)
        metadata = self._admin()
        try:
            return self._reassign(admin, metadata, topic, replicas, timeout_s)
        finally:
            admin.reset()
            metadata.poll(0)

    def _reassign(self, admin: _FreshClient, metadata: Any, topic: str, replicas: Mapping[int, Sequence[int]],
                  timeout_s: float) -> OperationOutcome:
        deadline = time.monotonic() + timeout_s
        api: bool | None = None
        submitted = tried = False
        last = "nothing yet"
        while True:
            try:
                if api is None:
                    api = ALTER_PARTITION_REASSIGNMENTS in offered_api_keys(admin.get())
                if not api:
                    return OperationOutcome("error", "", "the broker does not offer AlterPartitionReassignments "
                                            "(KIP-455, Kafka 2.4+)", ())
                if not submitted and tried:  # an attempt's answer was lost: it may have gone through
                    submitted = self._in_place(admin.get(), metadata, topic, replicas)
                if not submitted:
                    tried = True
                    rejected = self._submit_api(admin.get(), topic, replicas, timeout_s)
                    if rejected:
                        return OperationOutcome("error", _via(api), "the broker refused the reassignment of "
                                                + ", ".join(f"{topic}/{p}" for p in sorted(rejected)),
                                                tuple(PartitionOutcome(topic, p, rejected.get(p))
                                                      for p in sorted(replicas)))
                    submitted = True
                pending = self._pending_api(admin.get(), topic, replicas)
                listed = self._replicas(metadata, topic)
                off = {p: listed.get(p) for p, want in replicas.items() if listed.get(p) != tuple(want)}
                if not pending and not off:
                    return OperationOutcome("done", _via(api), "", tuple(
                        PartitionOutcome(topic, p, None, listed.get(p)) for p in sorted(replicas)))
                replaced = {p: t for p, t in pending.items() if t != tuple(replicas[p])}
                last = (f"pending: {sorted(pending)}; " if pending else "") + "; ".join(
                    f"{topic}/{p} lists {list(r) if r is not None else 'nothing'}, want {list(replicas[p])}"
                    for p, r in sorted(off.items())) + "".join(
                    f"; {topic}/{p} is now being moved to {list(t)} (a later reassignment replaces a pending one, "
                    "KIP-455)" for p, t in sorted(replaced.items()))
            except Exception as exc:  # a broker, the controller or ZooKeeper briefly away: retried until the deadline
                last = ("" if submitted else "not submitted yet: ") + f"{type(exc).__name__}: {exc}"
                admin.reset()  # kafka-python keeps the controller id it found first: a new client looks again
            if time.monotonic() >= deadline:
                return OperationOutcome("timeout", _via(api), f"awaited the reassignment of {topic} to finish "
                                        f"within {timeout_s:g}s; last seen: {last}", ())
            time.sleep(POLL_S)

    def _submit_api(self, admin: Any, topic: str, replicas: Mapping[int, Sequence[int]],
                    timeout_s: float) -> dict[int, str]:
        from kafka import TopicPartition

        answers = admin.alter_partition_reassignments(
            {TopicPartition(topic, p): list(r) for p, r in replicas.items()}, timeout_ms=int(timeout_s * 1000))
        return {tp.partition: getattr(err, "__name__", str(err)) for tp, err in answers.items() if err is not None}

    def _pending_api(self, admin: Any, topic: str, replicas: Mapping[int, Sequence[int]]) -> dict[int, tuple[int, ...]]:
        """The partitions of `replicas` with a reassignment pending, each with its target: the replica list
        without the replicas being removed (KIP-455's ListPartitionReassignments)."""
        listed = admin.list_partition_reassignments({topic: sorted(replicas)})
        return {tp.partition: tuple(r for r in state["replicas"] if r not in state["removing_replicas"])
                for tp, state in listed.items()}

    def _in_place(self, admin: Any, metadata: Any, topic: str, replicas: Mapping[int, Sequence[int]]) -> bool:
        """Whether every partition is being moved to, or already lists, the replicas asked for: a request whose
        answer was lost (a controller killed or cut off before it answered) went through, and is not sent
        again. Sent again it could be refused for what changed since: Apache Kafka 3.9's controller refuses a
        reassignment that adds a broker that is not alive (`KafkaController.validateReplicas`), while the
        first request's move goes on and finishes once that broker is back."""
        pending = self._pending_api(admin, topic, replicas)
        listed = self._replicas(metadata, topic)
        return all(pending.get(p, listed.get(p)) == tuple(want) for p, want in replicas.items())

    @staticmethod
    def _replicas(metadata: Any, topic: str) -> dict[int, tuple[int, ...]]:
        """The replica list per partition of `topic`, as Metadata lists it."""
        listed = metadata.list_topics(topic, timeout=10.0).topics[topic]
        if listed.error is not None:
            raise RuntimeError(f"Metadata for {topic}: {listed.error}")
        return {p: tuple(meta.replicas) for p, meta in listed.partitions.items()}

    def _admin(self, socket_timeout_s: float = 10.0) -> Any:
        from confluent_kafka.admin import AdminClient

        return AdminClient(cast(dict[str, Any], {"bootstrap.servers": self.bootstrap_servers,
                                                 "socket.timeout.ms": int(socket_timeout_s * 1000),
                                                 "logger": LIBRDKAFKA_LOGGER, **self.security.librdkafka()}))

    # -- elect_preferred ---------------------------------------------------------------------------

    def elect_preferred(self, topic: str | None, partitions: Sequence[int], timeout_s: float) -> OperationOutcome:
        from confluent_kafka import ElectionType, KafkaException, TopicPartition

        via = "ElectLeaders"
        wanted = [TopicPartition(topic, p) for p in partitions] if topic is not None else None

        last = "nothing yet"
        # The timeouts come from socket.timeout.ms: confluent-kafka 2.16's binding of elect_leaders fails on its
        # request_timeout / operation_timeout keywords (SystemError in argument parsing).
        for admin, left in self._attempts(timeout_s):
            try:
                answers = admin.elect_leaders(ElectionType.PREFERRED, wanted).result(timeout=left + 1.0)
                results = tuple(sorted(
                    (PartitionOutcome(tp.topic, tp.partition, None if err is None else _error_name(err))
                     for tp, err in answers.items()), key=lambda r: (r.topic, r.partition)))
                return OperationOutcome("done", via, "", results)
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                last = str(err or exc)
                if not _worth_retrying(err):
                    return OperationOutcome("error", via, f"ElectLeaders failed: {last}")
            except TimeoutError:
                last = "no answer"
        return OperationOutcome("timeout", via, f"awaited the answer to ElectLeaders within {timeout_s:g}s; "
                                f"last seen: {last}")

    # -- add_partitions ---------------------------------------------------------------------------

    def add_partitions(self, topic: str, count: int, timeout_s: float) -> OperationOutcome:
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import NewPartitions

        via = "CreatePartitions"
        before: int | None = None
        submitted = False
        last = "nothing yet"
        for admin, left in self._attempts(timeout_s):
            try:
                parts = admin.list_topics(topic, timeout=min(left, 10.0)).topics[topic].partitions
                before = len(parts) if before is None else before
                if not submitted:
                    if before >= count:
                        return OperationOutcome("error", via, f"{topic} already has {before} partitions (asked: "
                                                f"{count})")
                    future = admin.create_partitions([NewPartitions(topic, count)],
                                                     operation_timeout=min(left, 30.0))[topic]
                    future.result(timeout=left + 1.0)
                    submitted = True
                    parts = admin.list_topics(topic, timeout=min(left, 10.0)).topics[topic].partitions
                led = {p: m for p, m in parts.items() if m.leader >= 0}
                if len(parts) >= count and all(p in led for p in range(count)):
                    return OperationOutcome("done", via, "", tuple(
                        PartitionOutcome(topic, p, None, tuple(parts[p].replicas)) for p in range(before, count)))
                last = f"{len(parts)} partitions, {len(led)} with a leader"
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                last = str(err or exc)
                code = getattr(err, "code", lambda: 0)()
                if code == KafkaError.INVALID_PARTITIONS and f"already has {count} partitions" in last:
                    submitted = True  # an earlier attempt's request went through; its answer was lost
                elif not _worth_retrying(err):
                    return OperationOutcome("error", via, f"CreatePartitions failed: {last}")
            except TimeoutError:
                last = "no answer"
        what = "every new partition with a leader" if submitted else "the answer to CreatePartitions"
        return OperationOutcome("timeout", via, f"awaited {what} within {timeout_s:g}s; last seen: {last}")

    # -- rolling_restart ----------------------------------------------------------------------------

    def await_in_sync(self, broker: int, timeout_s: float) -> str | None:
        """Metadata (all topics, internal ones included) until `broker` is listed and no partition is
        under-replicated, the check operators make between the brokers of a rolling restart."""
        last = "nothing yet"
        for admin, left in self._attempts(timeout_s):
            try:
                meta = admin.list_topics(timeout=min(left, 10.0))
                short = sorted(f"{name}/{p} ISR {sorted(m.isrs)} of {sorted(m.replicas)}"
                               for name, t in meta.topics.items() for p, m in t.partitions.items()
                               if set(m.isrs) != set(m.replicas))
                if broker in meta.brokers and not short:
                    return None
                last = (f"broker {broker} not registered; " if broker not in meta.brokers else "") + (
                    f"{len(short)} partitions under-replicated, e.g. {', '.join(short[:3])}" if short
                    else "every ISR full")
            except Exception as exc:  # no answer, or a broker briefly away: retried until the deadline
                last = f"{type(exc).__name__}: {exc}"
        return last

    # -- upgrade (KRaft) -------------------------------------------------------------------------------

    def await_voter(self, voter: int, timeout_s: float) -> str | None:
        from harness.faults.kraft_upgrade import await_voter

        return await_voter(self.voters, voter, timeout_s, self.voter_security)

    def await_brokers_follow_kraft(self, timeout_s: float, stop: threading.Event) -> str | None:
        from harness.faults.migration_brokers import await_following

        return await_following(self.brokers, timeout_s, stop, self.security)

    def finalize_metadata(self, timeout_s: float) -> OperationOutcome:
        from harness.faults.kraft_upgrade import finalize_metadata

        return finalize_metadata(self.bootstrap_servers, timeout_s, self.security)

    def _attempts(self, timeout_s: float) -> Iterator[tuple[Any, float]]:
        """One attempt after another until `timeout_s` has passed (at least one), POLL_S apart: each with a new
        admin client (librdkafka keeps waiting for a controller or broker it knew, gone in a failover), whose
        socket timeout fits the time left, and the time left. The client's queued log lines are handed over
        when the attempt ends."""
        deadline = time.monotonic() + timeout_s
        while True:
            left = max(1.0, deadline - time.monotonic())
            admin = self._admin(socket_timeout_s=min(left, ELECT_ATTEMPT_S))
            try:
                yield admin, left
            finally:
                admin.poll(0)
            if time.monotonic() >= deadline:
                return
            time.sleep(POLL_S)


def _worth_retrying(err: object) -> bool:
    """Whether an admin request's error may go away with a new client: no answer came (librdkafka's local
    codes: _TIMED_OUT, _TRANSPORT, ...), the error is retriable, or the request reached a broker that is no
    longer the controller (NOT_CONTROLLER: librdkafka does not retry it, and a fresh client finds the new
    one)."""
    code = getattr(err, "code", lambda: 0)()
    return bool(code < 0 or code == NOT_CONTROLLER or getattr(err, "retriable", lambda: False)())


def _via(api: bool | None) -> str:
    return "AlterPartitionReassignments" if api else ""


def _error_name(err: object) -> str:
    """A per-partition answer's error as Kafka names it (`ELECTION_NOT_NEEDED`)."""
    inner = err.args[0] if isinstance(err, Exception) and err.args else err
    name = getattr(inner, "name", None)
    return str(name()) if callable(name) else str(inner)


def offered_api_keys(client: Any) -> set[int]:
    """The API keys the broker offers, by kafka-python's `KafkaAdminClient`. Its `api_versions()` turns each key
    into its `ApiKey` enum and raises ValueError on one it does not know (kafka-python 3.0.12 against Apache Kafka
    4.4.0, which offers key 93: every reassignment failed before it was submitted, found by the false-fail hunt,
    kraft schedule 12); then the keys are read as the broker sent them."""
    try:
        return {int(k) for k in client.api_versions()}
    except ValueError:
        return {int(k) for k in client._manager.broker_version_data.api_versions}


class _FreshClient:
    """kafka-python's `KafkaAdminClient`, made on first use and made anew after `reset`."""

    def __init__(self, bootstrap_servers: str, security: ClientSecurity = PLAINTEXT) -> None:
        self.bootstrap_servers = bootstrap_servers
        self.security = security
        self._client: Any = None

    def get(self) -> Any:
        if self._client is None:
            from kafka.admin import KafkaAdminClient

            self._client = KafkaAdminClient(bootstrap_servers=self.bootstrap_servers.split(","),
                                            client_id="kafka-chaos-operator", request_timeout_ms=10000,
                                            **self.security.kafka_python())
        return self._client

    def reset(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()
