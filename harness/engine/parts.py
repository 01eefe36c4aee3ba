"""The real parts a run is made of: observers (ZooKeeper, Admin, per-broker Metadata; in KRaft the quorum, KRaft
metadata and Admin observers), workloads (confluent-kafka
producers and consumer groups, or on `workload.client: java` the Java client's workers) built from the experiment's
specs, and topic creation. The runner
takes them through `RunParts`, so its phase logic is testable without a cluster; so is the operator that
carries out the schedule's operations. Every librdkafka
client made here logs to `LIBRDKAFKA_LOGGER` (the run's `clients.log`), never to stderr."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from harness.cluster.base import Cluster, client_access
from harness.errors import HarnessError, HarnessTimeout
from harness.experiment.schema import Experiment
from harness.faults.operations import Operator
from harness.history.jsonl import EventSink
from harness.observe.base import Observer
from harness.workload.base import MemberClient, Workload
from harness.workload.common import LIBRDKAFKA_LOGGER

if TYPE_CHECKING:
    from harness.workload.java_client import WorkerClient

VALUE_STRIDE = 1_000_000_000
"""Producer i writes the unique values i*VALUE_STRIDE + n (n = 0, 1, ...)."""


def value_base(exp: Experiment, writer: str) -> int:
    """The first value of a writer (a producer's or a pipeline's id): the producers' in order, then the pipelines'."""
    writers = [p.id for p in exp.workload.producers] + [p.id for p in exp.workload.pipelines]
    return (writers.index(writer) + 1) * VALUE_STRIDE


@dataclass(frozen=True, slots=True)
class RunParts:
    observers: Callable[[Experiment, Cluster, EventSink], Sequence[Observer]]
    producers: Callable[[Experiment, Cluster, EventSink], Sequence[Workload]]
    consumers: Callable[[Experiment, Cluster, EventSink], Sequence[Workload]]
    create_topics: Callable[[Experiment, Cluster], None]
    operator: Callable[[Cluster], Operator] = lambda cluster: real_operator(cluster)
    """What carries out the schedule's operations (reassign, elect_preferred)."""


def real_operator(cluster: Cluster) -> Operator:
    from harness.faults.kafka_operator import KafkaOperator

    return KafkaOperator(cluster.bootstrap_servers, cluster.quorum_voters, security=client_access(cluster, "admin"),
                         voter_security=client_access(cluster, "admin", controllers=True),
                         brokers=cluster.broker_addresses)


def real_observers(exp: Experiment, cluster: Cluster, sink: EventSink) -> list[Observer]:
    from harness.observe.isolated import IsolatedAdminObserver
    from harness.observe.metadata import MetadataObserver
    from harness.observe.zookeeper import ZooKeeperObserver

    groups = [c.group for c in exp.workload.consumers]
    admin = client_access(cluster, "admin")
    if exp.cluster.mode == "kraft":
        from harness.observe.kraft_metadata import KraftMetadataObserver
        from harness.observe.quorum import QuorumObserver

        # No per-broker Metadata observer: in KRaft a broker's Metadata names a random broker as controller.
        return [QuorumObserver(cluster.quorum_voters, sink, security=client_access(cluster, "admin", controllers=True)),
                KraftMetadataObserver(cluster.broker_addresses, sink, security=admin),
                IsolatedAdminObserver(cluster.bootstrap_servers, sink, groups=groups, controller_events=False,
                                      security=admin)]
    # The backends list the `client->j` proxies of brokers 1..N in order in the bootstrap list.
    brokers = sorted(n.id for n in cluster.nodes if n.role == "broker")
    observers: list[Observer] = [
        ZooKeeperObserver(cluster.zookeeper_connect, sink),
        IsolatedAdminObserver(cluster.bootstrap_servers, sink, groups=groups, security=admin),
        MetadataObserver.from_bootstrap(cluster.bootstrap_servers, brokers, sink, security=admin)]
    if exp.cluster.migrating:
        from harness.observe.quorum import QuorumObserver

        # The migration's KRaft quorum, beside ZooKeeper's view: `src: quorum` events from its controllers' start
        # (before it, one observer.error per voter), `src: zk` ones from ZooKeeper, each naming its authority.
        observers.append(QuorumObserver(cluster.quorum_voters, sink,
                                        security=client_access(cluster, "admin", controllers=True)))
    return observers


def worker_client(exp: Experiment, cluster: Cluster) -> WorkerClient | None:
    """The client the workloads run on out of process (the Java client; librdkafka of a `client_version`), or None
    for the installed confluent-kafka in process."""
    from harness.workload.java_client import java_client, librdkafka_client

    if exp.workload.client == "java":
        return java_client(exp.workload.java_release(cluster.flavour.version))
    if exp.workload.client_version is not None:
        return librdkafka_client(exp.workload.client_version)
    return None


def client_settings(cluster: Cluster, client: WorkerClient | None) -> dict[str, str]:
    """The workloads' security settings (`cluster.security`'s `client` user) in their client's own names."""
    access = client_access(cluster, "client")
    return access.java() if client is not None and client.kind == "java" else access.librdkafka()


def real_producers(exp: Experiment, cluster: Cluster, sink: EventSink) -> list[Workload]:
    from harness.workload.producer import ProducerWorkload
    from harness.workload.txn_producer import TransactionalProducerWorkload

    out: list[Workload] = []
    client = worker_client(exp, cluster)
    secured = client_settings(cluster, client)
    if client is not None:
        from harness.workload.java_client import WorkerProducerWorkload, WorkerTransactions

        return [WorkerProducerWorkload(cluster.bootstrap_servers, sink, client=client, producer_id=p.id, topic=p.topic,
                                     rate=p.rate, acks=p.acks, idempotence=p.idempotence, keys=p.keys,
                                     value_base=value_base(exp, p.id), extra_config={**secured, **p.config},
                                     transactions=None if p.transactions is None else WorkerTransactions(
                                         p.transactions.id, p.transactions.records, p.transactions.abort_rate,
                                         p.transactions.timeout, exp.seed))
                for p in exp.workload.producers]
    for p in exp.workload.producers:
        base = value_base(exp, p.id)
        t = p.transactions
        out.append(
            ProducerWorkload(cluster.bootstrap_servers, sink, producer_id=p.id, topic=p.topic, rate=p.rate,
                             acks=p.acks, idempotence=p.idempotence, keys=p.keys, value_base=base,
                             extra_config={**secured, **p.config}) if t is None else
            TransactionalProducerWorkload(cluster.bootstrap_servers, sink, producer_id=p.id, topic=p.topic,
                                          rate=p.rate, transactional_id=t.id, records=t.records,
                                          abort_rate=t.abort_rate, timeout_s=t.timeout, seed=exp.seed, keys=p.keys,
                                          value_base=base, extra_config={**secured, **p.config}))
    return out


def real_consumers(exp: Experiment, cluster: Cluster, sink: EventSink) -> list[Workload]:
    """The consumer groups, and the pipelines (they consume until the drain ends, like the groups)."""
    from harness.workload.consumer import ConsumerGroupWorkload

    new_member: Callable[..., MemberClient] | None = None
    client = worker_client(exp, cluster)
    secured = client_settings(cluster, client)
    if client is not None:
        from harness.workload.java_client import (
            WorkerMember,
            WorkerPipeline,
            WorkerProducerWorkload,
            WorkerTransactions,
        )

        new_member = functools.partial(WorkerMember, client=client)
        pipelines: list[Workload] = [
            WorkerProducerWorkload(cluster.bootstrap_servers, sink, client=client, producer_id=p.id, topic=p.output,
                                 rate=1.0, value_base=value_base(exp, p.id), pipeline=WorkerPipeline(p.group, p.input),
                                 extra_config=secured, consumer_config=secured,
                                 transactions=WorkerTransactions(p.transactions.id, p.transactions.records,
                                                               timeout_s=p.transactions.timeout, seed=exp.seed))
            for p in exp.workload.pipelines]
    else:
        from harness.workload.pipeline import PipelineWorkload

        pipelines = [
            PipelineWorkload(cluster.bootstrap_servers, sink, pipeline_id=p.id, group=p.group, input_topic=p.input,
                             output_topic=p.output, transactional_id=p.transactions.id, records=p.transactions.records,
                             timeout_s=p.transactions.timeout, value_base=value_base(exp, p.id),
                             extra_config=secured, consumer_config=secured)
            for p in exp.workload.pipelines]
    return [*(ConsumerGroupWorkload(cluster.bootstrap_servers, sink, group=c.group, topics=list(c.topics),
                                    members=c.members, strategy=c.strategy, commit=c.commit,
                                    extra_config={**secured, **c.config}, isolation=c.isolation,
                                    new_member=new_member)
              for c in exp.workload.consumers), *pipelines]


def create_topics(exp: Experiment, cluster: Cluster, timeout_s: float = 60.0) -> None:
    """Create the experiment's topics through AdminClient (an existing topic is fine). librdkafka's
    log lines go to the workloads' logger (`clients.log` during a run), never to stderr."""
    if not exp.topics:
        return
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(cast(dict[str, Any], {"bootstrap.servers": cluster.bootstrap_servers,
                                              "logger": LIBRDKAFKA_LOGGER,
                                              **client_access(cluster, "admin").librdkafka()}))
    try:
        new = [NewTopic(t.name, num_partitions=t.partitions, replication_factor=t.replication_factor,
                        config=dict(t.config)) for t in exp.topics]
        futures = admin.create_topics(new, operation_timeout=timeout_s, request_timeout=timeout_s)
        for name, future in futures.items():
            try:
                future.result(timeout=timeout_s)
            except KafkaException as exc:
                err = exc.args[0]
                if isinstance(err, KafkaError) and err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    continue
                raise HarnessError(f"creating topic {name!r} on {cluster.bootstrap_servers} failed: {err}") from exc
            except TimeoutError as exc:
                raise HarnessTimeout(f"topic {name!r} to be created", timeout_s, None,
                                     "check that the brokers answer Metadata and CreateTopics") from exc
    finally:
        admin.poll(0)  # hands the queued log lines to the logger
        del admin  # the handle goes now, not with the traceback of an error


REAL_PARTS = RunParts(real_observers, real_producers, real_consumers, create_topics, real_operator)
