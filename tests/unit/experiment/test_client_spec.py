"""`workload.client` and `workload.client_version`: which client library runs the workload, what each accepts, and
the resolved YAML keeping both."""

from __future__ import annotations

import pytest

from harness.errors import ValidationError
from harness.experiment import load_experiment_text
from harness.experiment.dump import dump_experiment

BASE = """name: c
duration: 30s
topics: [{name: t, partitions: 3}, {name: out}]
workload:
  CLIENT
  producers:
    - {id: p, topic: t}
  consumers:
    - {group: g, topics: [t], members: 2}
"""


def _load(client: str, extra: str = "") -> object:
    return load_experiment_text(BASE.replace("CLIENT", client) + extra, "c.yaml")


def test_the_default_client_is_librdkafka_with_no_version() -> None:
    exp = load_experiment_text(BASE.replace("CLIENT", ""), "c.yaml")
    assert (exp.workload.client, exp.workload.client_version) == ("librdkafka", None)


def test_the_java_client_takes_a_kafka_clients_release_and_the_resolved_yaml_keeps_it() -> None:
    exp = load_experiment_text(BASE.replace("CLIENT", "client: java\n  client_version: '3.9.1'"), "c.yaml")
    assert (exp.workload.client, exp.workload.client_version) == ("java", "3.9.1")
    assert load_experiment_text(dump_experiment(exp), "resolved.yaml").workload == exp.workload


@pytest.mark.parametrize(("client", "message"), [
    ("client: go", "not a valid choice"),
    ("client: java\n  client_version: '2.7.0'", "older than 2.8.0"),
    ("client: java\n  client_version: '3.9'", "not a kafka-clients release"),
    ("client_version: '2.1.2'", "not a confluent-kafka release with wheels on PyPI"),
    ("client_version: '1.9.2'", "not a confluent-kafka release with wheels on PyPI"),
])
def test_a_client_or_version_the_harness_cannot_run_is_refused_at_its_line(client: str, message: str) -> None:
    with pytest.raises(ValidationError, match=message) as err:
        _load(client)
    assert "c.yaml:5" in str(err.value) or "c.yaml:6" in str(err.value)


def test_a_pinned_librdkafka_takes_a_confluent_kafka_release_and_the_resolved_yaml_keeps_it() -> None:
    exp = load_experiment_text(BASE.replace("CLIENT", "client_version: '2.1.0'"), "c.yaml")
    assert (exp.workload.client, exp.workload.client_version) == ("librdkafka", "2.1.0")
    assert load_experiment_text(dump_experiment(exp), "resolved.yaml").workload == exp.workload


def test_a_confluent_kafka_release_without_a_wheel_for_the_python_is_refused_with_the_first_that_has_one() -> None:
    from harness.errors import ConfigError
    from harness.install.librdkafka_client import check_librdkafka_version

    assert check_librdkafka_version("2.1.0", "cp311") == "2.1.0"
    with pytest.raises(ConfigError, match=r"no wheel for this Python \(cp312\); the first with one is 2\.3\.0"):
        check_librdkafka_version("2.1.0", "cp312")
    with pytest.raises(ConfigError, match=r"no confluent-kafka wheel is known for this Python \(cp315\)"):
        check_librdkafka_version("2.16.1", "cp315")


def test_a_pinned_librdkafka_runs_transactional_producers_pipelines_and_zombie_restarts() -> None:
    text = BASE.replace("CLIENT", "client_version: '2.1.0'").replace(
        "    - {id: p, topic: t}\n", "    - {id: p, topic: t}\n    - {id: tx, topic: t, transactions: {}}\n")
    assert load_experiment_text(text, "c.yaml").workload.producers[1].transactions is not None
    zombie = text + "schedule:\n  - {at: 5s, action: restart_producer, producer: tx, zombie: true}\n"
    assert load_experiment_text(zombie, "c.yaml").operations[0].zombie


def test_the_java_client_runs_transactional_producers_and_their_zombie_restarts() -> None:
    text = BASE.replace("CLIENT", "client: java")
    text = text.replace("    - {id: p, topic: t}\n",
                        "    - {id: p, topic: t}\n    - {id: tx, topic: t, transactions: {}}\n")
    assert load_experiment_text(text, "c.yaml").workload.producers[1].transactions is not None
    zombie = text + "schedule:\n  - {at: 5s, action: restart_producer, producer: tx, zombie: true}\n"
    assert load_experiment_text(zombie, "c.yaml").operations[0].zombie


def test_the_java_client_runs_pipelines() -> None:
    text = BASE.replace("CLIENT", "client: java") + "  pipelines:\n    - {id: e, input: t, output: out}\n"
    (pipe,) = load_experiment_text(text, "c.yaml").workload.pipelines
    assert (pipe.id, pipe.input, pipe.output) == ("e", "t", "out")


def test_a_librdkafka_setting_on_the_java_client_is_refused_with_the_java_name() -> None:
    text = BASE.replace("CLIENT", "client: java").replace("{id: p, topic: t}",
                                                         "{id: p, topic: t, config: {message.timeout.ms: 5000}}")
    with pytest.raises(ValidationError, match=r"which calls it delivery\.timeout\.ms") as err:
        load_experiment_text(text, "c.yaml")
    assert "c.yaml:7:34: workload.producers[0].config['message.timeout.ms']" in str(err.value)
    assert load_experiment_text(text.replace("client: java", "client: librdkafka"), "c.yaml")
