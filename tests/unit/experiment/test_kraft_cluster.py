"""The `cluster:` rules of KRaft mode: defaults, the mode a Kafka version implies, and the refusals, each
naming the file, line and field."""

from __future__ import annotations

import pytest

from harness.errors import ValidationError
from harness.experiment import load_experiment_text, load_experiments_text

HEAD = "name: x\nduration: 60s\n"


def cluster(text: str):  # type: ignore[no-untyped-def]
    return load_experiment_text(f"{HEAD}cluster: {text}\n", "k.yaml").cluster


def test_mode_kraft_defaults_to_the_newest_kafka_4_and_three_dedicated_controllers() -> None:
    c = cluster("{mode: kraft}")
    assert (c.mode, c.kafka_version, c.controllers, c.combined, c.zookeepers) == ("kraft", "4", 3, False, 0)


def test_kafka_4_implies_kraft_and_3_x_implies_zookeeper() -> None:
    assert cluster('{kafka: "4.1"}').mode == "kraft"
    assert cluster('{kafka: "3.9"}').mode == "zookeeper" and cluster("{}").mode == "zookeeper"
    assert cluster('{kafka: "3.9", mode: kraft, combined: true, controllers: 1}').combined


@pytest.mark.parametrize(("text", "field", "fragment"), [
    ('{kafka: "4.1", mode: zookeeper}', "cluster.kafka", "has no ZooKeeper mode"),
    ("{mode: kraft, zookeepers: 3}", "cluster.zookeepers", "a KRaft cluster has no ZooKeeper"),
    ("{controllers: 3}", "cluster.controllers", "the KRaft quorum a `migrate_to_kraft` starts"),
    ("{mode: kraft, controllers: 2}", "cluster.controllers", "1, 3 or 5 voters"),
    ("{mode: kraft, combined: true, controllers: 5}", "cluster.controllers", "are 3 brokers"),
    ('{mode: kraft, kafka: "3.2"}', "cluster.kafka", "came in 3.3"),
    ("{mode: raft}", "cluster.mode", "zookeeper"),
])
def test_kraft_refusals_name_the_line_and_field(text: str, field: str, fragment: str) -> None:
    with pytest.raises(ValidationError) as info:
        load_experiments_text(f"{HEAD}cluster: {text}\n", "k.yaml")
    rendered = [p.render() for p in info.value.problems]
    assert any(r.startswith("k.yaml:3:") and f": {field}: " in r and fragment in r for r in rendered), rendered
