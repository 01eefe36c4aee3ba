"""Run limits: `validate` refuses every value `run` would refuse (or overflow on) after starting
processes, naming the file, the line, the field and the value; values at the limits load."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from harness.cluster.render import TOPOLOGY_KEYS
from harness.engine.parts import VALUE_STRIDE
from harness.errors import Problem, ValidationError
from harness.experiment import load_experiment_text, load_experiments_text
from harness.experiment.limits import MAX_VALUES_PER_PRODUCER, RESERVED_BROKER_KEYS

ROOT = Path(__file__).resolve().parents[3]
HEAD = "name: x\nduration: 60s\n"
TOPIC = "topics: [{name: t, partitions: 2, replication_factor: 1}]\n"


def problems_of(text: str) -> list[Problem]:
    with pytest.raises(ValidationError) as info:
        load_experiments_text(text, "m.yaml")
    return info.value.problems


def one(text: str, line: int, field: str, fragment: str) -> Problem:
    """The problems of `text` include one at m.yaml:`line` about `field` whose rendering holds `fragment`."""
    found = problems_of(text)
    for p in found:
        if p.line == line and p.field == field and fragment in p.render():
            assert p.render().startswith(f"m.yaml:{line}:") and f": {field}: " in p.render()
            return p
    raise AssertionError(f"no problem at line {line} {field} with {fragment!r}; got:\n"
                         + "\n".join(p.render() for p in found))


@pytest.mark.parametrize(("value", "fragment"), [
    (".nan", "must be a finite number (not .nan or .inf) (got nan)"),
    (".inf", "must be a finite number"),
    ("-.inf", "must be a finite number"),
    ("1.0e+400", "must be a finite number"),
    ("1" + "0" * 99, "must be at most 10000"),
    ("1.0e+20", "must be at most 10000"),
    ("10001", "must be at most 10000"),
])
def test_producer_rates_are_finite_and_bounded(value: str, fragment: str) -> None:
    one(f"{HEAD}{TOPIC}workload: {{producers: [{{topic: t, rate: {value}}}]}}\n", 4,
        "workload.producers[0].rate", fragment)


@pytest.mark.parametrize(("field", "yaml_value", "fragment"), [
    ("brokers", "100000000000000000000", "must be at most 9 (got 100000000000000000000)"),
    ("brokers", "1.0e+20", "must be an integer"),
    ("brokers", "10", "must be at most 9"),
    ("zookeepers", "7", "1, 3 or 5 members"),
    ("zookeepers", "2", "1, 3 or 5 members"),
])
def test_cluster_counts_and_versions_the_backends_refuse(field: str, yaml_value: str, fragment: str) -> None:
    one(f"{HEAD}cluster:\n  {field}: {yaml_value}\n", 4, f"cluster.{field}", fragment)


@pytest.mark.parametrize("version", ['"4.0"', '"8.0"'])
def test_zookeeper_mode_is_refused_on_kafka_4_and_later(version: str) -> None:
    one(f"{HEAD}cluster:\n  mode: zookeeper\n  kafka: {version}\n", 5, "cluster.kafka", "has no ZooKeeper mode")
    one(f"{HEAD}cluster:\n  zookeepers: 1\n  kafka: {version}\n", 5, "cluster.kafka", "has no ZooKeeper mode")


def test_the_retired_reference_broker_is_refused_at_its_line_saying_what_to_write_instead() -> None:
    text = f"{HEAD}cluster:\n  broker: reference\n  reference_bugs: [skip_epoch_bump]\n"
    retired = ("the reference broker was retired; use apache-kafka (a planted bug's history is kept under "
               "tests/data/recorded/reference-*)")
    broker = one(text, 4, "cluster.broker", f"{retired} (got 'reference')")
    bugs = one(text, 5, "cluster.reference_bugs", f"{retired} (got ['skip_epoch_bump'])")
    assert (broker.hint, bugs.hint) == ("broker: apache-kafka (or auto)", "remove reference_bugs")
    with pytest.raises(ValidationError, match=r"cluster\.broker: the reference broker was retired"):
        load_experiment_text(f"{HEAD}cluster: {{broker: reference}}\n", "m.yaml")


@pytest.mark.parametrize("key", sorted(RESERVED_BROKER_KEYS))
def test_every_reserved_broker_config_key_is_named_with_what_the_harness_sets(key: str) -> None:
    field = f"cluster.broker_config.{key}" if "." not in key else f"cluster.broker_config[{key!r}]"
    p = one(f"{HEAD}cluster:\n  broker_config:\n    {key}: x\n", 5, field,
            f"{key} is reserved: the harness sets it itself, to {RESERVED_BROKER_KEYS[key]}")
    assert p.hint == "remove it from broker_config"


def test_the_reserved_keys_cover_every_property_the_renderer_writes() -> None:
    assert set(TOPOLOGY_KEYS) <= set(RESERVED_BROKER_KEYS)


@pytest.mark.parametrize(("key", "value", "fragment"), [
    ("min.insync.replicas", "two", "the broker cannot read it"),
    ("unclean.leader.election.enable", "maybe", "the broker cannot read it"),
    ("log.segment.bytes", '"1.5"', "the broker cannot read it: log.segment.bytes='1.5' is not a valid int"),
    ("zookeeper.session.timeout.ms", "6s", "must be an integer from 1 to 2147483647"),
    ("offsets.topic.num.partitions", "0", "must be an integer from 1"),
    ("offsets.topic.num.partitions", "99999999999", "must be an integer from 1"),
    ("num.network.threads", '"3\\nlisteners=x"', "may not hold a NUL or a line break"),
    ("bad key", "1", "not a property name"),
    ("num.io.threads", ".nan", "must be a finite number"),
])
def test_broker_config_values_are_checked_as_the_broker_reads_them(key: str, value: str, fragment: str) -> None:
    field = f"cluster.broker_config[{key!r}]"
    one(f"{HEAD}cluster:\n  broker_config:\n    {key}: {value}\n", 5, field, fragment)


def test_typed_broker_config_values_that_read_well_load() -> None:
    exp = load_experiment_text(f"{HEAD}cluster:\n  broker_config: {{min.insync.replicas: 2, "
                               "unclean.leader.election.enable: false, zookeeper.session.timeout.ms: 6000, "
                               "some.kafka.property: anything}\n")
    assert exp.cluster.broker_config["unclean.leader.election.enable"] == "false"
    exp = load_experiment_text(f"{HEAD}cluster:\n  broker_config: {{auto.create.topics.enable: \"TRUE\", "
                               "log.flush.interval.messages: \" 9223372036854775807\", num.partitions: \"+3\"}\n")
    assert exp.cluster.broker_config["num.partitions"] == "+3"


@pytest.mark.parametrize(("text", "line", "field", "fragment"), [
    ("duration: 100000000000000000000s\n", 1, "duration", "must be at most 24h (got '100000000000000000000s')"),
    ("duration: 25h\n", 1, "duration", "must be at most 24h"),
    ("duration: 1m\nsteady_timeout: 90000s\n", 2, "steady_timeout", "must be at most 24h"),
    ("duration: 1m\ndrain: 1441m\n", 2, "drain", "must be at most 24h"),
    ("duration: 1m\nverify: {slo: {rebalance: 99999h}}\n", 2, "verify.slo.rebalance", "must be at most 24h"),
    ("duration: 1m\nschedule: [{at: 1s, fault: kill, target: broker:1, duration: 1000000h}]\n", 2,
     "schedule[0].duration", "must be at most 24h"),
    ("duration: 1m\nschedule: [{at: 1s, jitter: 1e20s, fault: kill, target: broker:1}]\n", 2,
     "schedule[0].jitter", "not a duration"),
])
def test_durations_are_bounded(text: str, line: int, field: str, fragment: str) -> None:
    one("name: x\n" + text, line + 1, field, fragment)


LINK = "  - {at: 1s, fault: %s, link: client->broker:1, duration: 5s, params: {%s}}\n"


@pytest.mark.parametrize(("kind", "params", "field", "fragment"), [
    ("latency", "latency_ms: 100000000000000000000", "latency_ms", "must be at most 86400000"),
    ("latency", "latency_ms: 1, jitter_ms: 86400001", "jitter_ms", "must be at most 86400000"),
    ("latency", "latency_ms: 1, toxicity: .nan", "toxicity", "must be a finite number"),
    ("latency", "latency_ms: 1.0e+20", "latency_ms", "must be an integer"),
    ("bandwidth", "rate_kbps: 2147483648", "rate_kbps", "must be at most 2147483647"),
    ("slicer", "average_size: 1, delay_us: 100000000000000", "delay_us", "must be at most 86400000000"),
    ("timeout", "timeout_ms: 99999999999", "timeout_ms", "must be at most 86400000"),
    ("limit_data", "bytes: 99999999999", "bytes", "must be at most 2147483647"),
])
def test_fault_parameters_are_bounded(kind: str, params: str, field: str, fragment: str) -> None:
    one(f"{HEAD}schedule:\n" + LINK % (kind, params), 4, f"schedule[0].params.{field}", fragment)


@pytest.mark.parametrize(("target", "fragment"), [
    ("broker:²", "malformed target"),
    ("broker:" + "9" * 5000, "malformed target"),
    ("broker:é", "ASCII text"),
])
def test_targets_the_parser_chokes_on_are_problems(target: str, fragment: str) -> None:
    one(f"{HEAD}schedule:\n  - {{at: 1s, fault: kill, target: '{target}'}}\n", 4, "schedule[0].target", fragment)


@pytest.mark.parametrize(("text", "line", "field", "fragment"), [
    ("seed: 18446744073709551616\n", 3, "seed", "must be at most 9223372036854775807"),
    ("topics: [{name: t, partitions: 100000000000000000000}]\n", 3, "topics[0].partitions", "at most 1000"),
    ("topics: [{name: __consumer_offsets}]\n", 3, "topics[0].name", "Kafka reserves this topic name"),
    ("topics: [{name: ..}]\n", 3, "topics[0].name", "Kafka reserves"),
    ("topics: [{name: t, config: {retention.ms: abc}}]\n", 3, "topics[0].config['retention.ms']",
     "Apache Kafka refuses this topic config (Invalid value abc for configuration retention.ms: Not a number of "
     "type LONG)"),
    ("topics: [{name: t, config: {dummy.doesntexist: 1}}]\n", 3, "topics[0].config['dummy.doesntexist']",
     "Unknown topic config name: dummy.doesntexist"),
    (TOPIC + "workload: {producers: [{topic: t, keys: 1000001}]}\n", 4, "workload.producers[0].keys",
     "at most 1000000"),
    (TOPIC + "workload: {producers: [{topic: t, id: ''}]}\n", 4, "workload.producers[0].id", "1 to 249 printable"),
    (TOPIC + "workload: {consumers: [{group: g, topics: [], members: 1}]}\n", 4, "workload.consumers[0].topics",
     "subscribes to at least one topic"),
    (TOPIC + "workload: {consumers: [{group: g, topics: [t], members: 100000000000000000000}]}\n", 4,
     "workload.consumers[0].members", "must be at most 32"),
    (TOPIC + "workload: {consumers: [{group: '', topics: [t]}]}\n", 4, "workload.consumers[0].group",
     "1 to 249 printable"),
    ("cluster: {images: {kafka: [a, b]}}\n", 3, "cluster.images.kafka", "must be a string"),
])
def test_counts_names_and_seeds_the_run_refuses(text: str, line: int, field: str, fragment: str) -> None:
    one(HEAD + text, line, field, fragment)


def test_lists_have_a_length_limit() -> None:
    faults = "".join(f"  - {{at: {i}s, fault: kill, target: controller}}\n" for i in range(201))
    one(f"name: x\nduration: 300s\nschedule:\n{faults}", 3, "schedule",
        "at most 200 faults and actions are allowed, got 201")
    topics = "".join(f"  - {{name: t{i}}}\n" for i in range(51))
    one(f"{HEAD}topics:\n{topics}", 3, "topics", "at most 50 topics")


def test_a_producer_may_not_outgrow_its_share_of_the_value_space() -> None:
    assert MAX_VALUES_PER_PRODUCER == VALUE_STRIDE
    one(f"name: x\nduration: 24h\nsteady_timeout: 24h\n{TOPIC}workload: {{producers: [{{topic: t, rate: 10000}}]}}\n",
        5, "workload.producers[0].rate", "would send more than 1e+09 values")


def test_clashing_faults_give_one_problem_each_not_one_per_pair() -> None:
    faults = "".join(f"  - {{at: {i}s, fault: kill, target: broker:1}}\n" for i in range(60))
    found = problems_of(f"name: x\nduration: 300s\nschedule:\n{faults}")
    assert len(found) == 59 and all("overlaps fault #0" in p.message for p in found)


def test_a_matrix_may_not_ask_for_too_much_validation_or_too_long_a_run_directory() -> None:
    faults = "".join(f"  - {{at: {i}s, fault: kill, target: controller}}\n" for i in range(150))
    one(f"name: x\nduration: 300s\nschedule:\n{faults}matrix:\n  seed: [{', '.join(map(str, range(64)))}]\n",
        154, "matrix", "nodes to validate; at most 50000")
    one(f"{HEAD}matrix:\n  description: [a, {'b' * 300}]\n", 3, "matrix", "run directory's name longer than 230")


def test_values_at_the_limits_load() -> None:
    exp = load_experiment_text(
        "name: x\nduration: 24h\nsteady_timeout: 1h\nseed: 9223372036854775807\n"
        "cluster: {brokers: 9, zookeepers: 5}\ntopics: [{name: t, partitions: 1000, replication_factor: 9}]\n"
        "workload: {producers: [{topic: t, rate: 10000, keys: 1000000}], "
        "consumers: [{group: g, topics: [t], members: 32}]}\n"
        "schedule: [{at: 1s, fault: latency, link: client->broker:9, duration: 1h, "
        "params: {latency_ms: 86400000, toxicity: 0.5}}]\n")
    assert exp.cluster.brokers == 9 and exp.workload.producers[0].rate == 10000.0


def test_validate_reports_every_file_and_exits_two(capsys: pytest.CaptureFixture[str]) -> None:
    bad = sorted(str(p) for p in (ROOT / "tests/data/bad_experiments").glob("*.yaml"))
    good = str(ROOT / "experiments/controller-failover.yaml")
    assert main(["validate", *bad[:len(bad) // 2], good, *bad[len(bad) // 2:]]) == 2
    out, err = capsys.readouterr()
    assert f"{good}: valid" in out
    for path in bad:
        assert f"{path}: invalid" in err, path
    assert "Traceback" not in err


def test_run_refuses_a_binary_file_with_exit_two(capsys: pytest.CaptureFixture[str]) -> None:
    path = ROOT / "tests/data/bad_experiments/binary_file.yaml"
    assert main(["run", str(path), "--backend", "process"]) == 2
    assert f"{path}:3:5: <document>: binary file" in capsys.readouterr().err
