"""Release rules of an experiment: what the Kafka release it asks for (`cluster.kafka`) cannot do.

Every refusal names the file, line and field, the release, what it lacks and since when, with the source
(`harness.model.releases`: the one table of release-dependent facts). The mode itself (ZooKeeper mode up to 3.x,
KRaft from 3.3) is judged where `cluster.kafka` is read (`cluster_fields`); here:
- a `broker_config` property the release does not have (Kafka would log it as unknown and ignore it, so the
  experiment would not test what it says), or no longer has (and what replaced it);
- a consumer group asking for the consumer group protocol (`config: {group.protocol: consumer}`, KIP-848)
  of a release before 4.0.
A `cluster.kafka` line (`3.9`) is judged by its first release, so a feature is granted only when every release
of the line has it.
"""

from __future__ import annotations

from harness.experiment.fields import Fields
from harness.experiment.schema import Experiment
from harness.install.kafka import kafka_request
from harness.model.releases import feature_problem, setting_problem


def check_release(f: Fields, exp: Experiment) -> None:
    request = kafka_request(exp.cluster.kafka_version)
    for key, value in exp.cluster.broker_config.items():
        problem = setting_problem(request, key)
        if problem:
            f.error(("cluster", "broker_config", key), problem, value,
                    f"remove it, or run a release that has it (cluster.kafka: {exp.cluster.kafka_version!r})")
    for i, group in enumerate(exp.workload.consumers):
        protocol = group.config.get("group.protocol", "classic")
        problem = feature_problem(request, "consumer_group_protocol") if protocol == "consumer" else None
        if problem:
            f.error(("workload", "consumers", i, "config", "group.protocol"), problem, protocol,
                    'group.protocol: classic, or cluster.kafka: "4"')
