"""`upgrade` and `finalize_upgrade` in an experiment file: they load as typed operations, and `validate` refuses
what Kafka's upgrade notes forbid (docs/upgrade.html, "Upgrading ZooKeeper-based clusters"), naming the file, line,
field and the note's rule: a downgrade, a ZooKeeper-mode cluster onto 4.x, an unpinned or too new
inter.broker.protocol.version, a finalize with no upgrade before it, a line as the starting release. A KRaft
upgrade pins nothing and rolls the controllers first."""

from __future__ import annotations

import pytest

from harness.errors import ValidationError
from harness.experiment import load_experiment_text
from harness.faults.schedule import plan_operations

HEAD = """name: up
cluster:
  kafka: "3.7.0"
  brokers: 3
  broker_config: {inter.broker.protocol.version: "3.7"}
topics: [{name: t, partitions: 2, replication_factor: 3}]
workload: {producers: [{topic: t}]}
duration: 60s
schedule:
"""


def rendered(text: str) -> list[str]:
    with pytest.raises(ValidationError) as info:
        load_experiment_text(text, "u.yaml")
    return [p.render() for p in info.value.problems]


def test_an_upgrade_and_its_finalize_load_and_plan_as_rolls_over_every_broker() -> None:
    exp = load_experiment_text(HEAD + """  - {at: 5s, action: upgrade, to: "3.9.2", brokers: [2, 1, 3]}
  - {at: 6s, action: finalize_upgrade}
""", "u.yaml")
    upgrade, finalize = exp.operations
    assert (upgrade.action, upgrade.to, upgrade.brokers, upgrade.timeout) == ("upgrade", "3.9.2", (2, 1, 3), 180.0)
    assert upgrade.describe() == "#0 upgrade brokers 2, 1, 3 -> 3.9.2"
    assert [op.brokers for op in plan_operations(exp)] == [(2, 1, 3), (1, 2, 3)]
    assert finalize.describe() == "#1 finalize_upgrade every broker"


@pytest.mark.parametrize(("entry", "field", "fragment"), [
    ('{at: 5s, action: upgrade, to: "3.6.2"}', "schedule[0].to", "newer release than the brokers run (3.7.0)"),
    ('{at: 5s, action: upgrade, to: "3.7.0"}', "schedule[0].to", "a downgrade"),
    ('{at: 5s, action: upgrade, to: "4.0.0"}', "schedule[0].to", "migrates to KRaft on 3.9 first (KIP-866)"),
    ('{at: 5s, action: upgrade, to: "3.9"}', "schedule[0].to", "major.minor.patch"),
    ("{at: 5s, action: upgrade}", "schedule[0].to", "major.minor.patch"),
    ("{at: 5s, action: finalize_upgrade}", "schedule[0].action", "schedule an upgrade before it"),
])
def test_validate_refuses_an_upgrade_the_notes_forbid_naming_the_line_and_field(entry: str, field: str,
                                                                                 fragment: str) -> None:
    problems = rendered(HEAD + f"  - {entry}\n")
    assert any(r.startswith("u.yaml:10:") and f": {field}: " in r and fragment in r for r in problems), problems


def test_a_finalize_before_its_upgrade_is_refused() -> None:
    problems = rendered(HEAD + """  - {at: 9s, action: upgrade, to: "3.9.2"}
  - {at: 5s, action: finalize_upgrade}
""")
    assert any(": schedule[1].action: " in r and "schedule an upgrade before it" in r for r in problems), problems


@pytest.mark.parametrize(("pin", "fragment"), [
    ("", "cluster.broker_config: before a rolling upgrade, Kafka's upgrade notes pin inter.broker.protocol.version"),
    ('inter.broker.protocol.version: "3.9"', "cluster.broker_config['inter.broker.protocol.version']: before a "
     "rolling upgrade"),
])
def test_a_zookeeper_upgrade_needs_the_protocol_pinned_to_the_running_release(pin: str, fragment: str) -> None:
    text = HEAD.replace('broker_config: {inter.broker.protocol.version: "3.7"}', f"broker_config: {{{pin}}}")
    problems = rendered(text + '  - {at: 5s, action: upgrade, to: "3.9.2"}\n')
    assert any(fragment in r and 'inter.broker.protocol.version: "3.7"' in r for r in problems), problems


def test_an_upgrade_starts_from_an_exact_release_not_a_line() -> None:
    problems = rendered(HEAD.replace('kafka: "3.7.0"', 'kafka: "3.7"') + '  - {at: 5s, action: upgrade, to: "3.9.2"}\n')
    assert any(": cluster.kafka: an upgrade starts from an exact release" in r for r in problems), problems


def test_a_kraft_upgrade_needs_no_pinned_protocol_and_plans_the_controllers_first() -> None:
    text = HEAD.replace('kafka: "3.7.0"', 'kafka: "3.9.2"\n  mode: kraft\n  controllers: 3').replace(
        '  broker_config: {inter.broker.protocol.version: "3.7"}\n', "")
    exp = load_experiment_text(text + """  - {at: 5s, action: upgrade, to: "4.4.0"}
  - {at: 6s, action: finalize_upgrade}
""", "u.yaml")
    upgrade, finalize = plan_operations(exp)
    assert [str(t) for t in upgrade.nodes] == ["controller:101", "controller:102", "controller:103", "broker:1",
                                                "broker:2", "broker:3"]
    assert finalize.nodes == ()  # metadata.version is bumped through the controllers: nothing restarts
