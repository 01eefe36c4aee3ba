"""The experiment loader: valid files load with defaults; every broken file names line and field."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from harness.errors import ValidationError
from harness.experiment import load_experiment, load_experiment_text, load_experiments
from harness.experiment.durations import format_duration, parse_duration

ROOT = Path(__file__).resolve().parents[3]
BAD = sorted((ROOT / "tests" / "data" / "bad_experiments").glob("*.yaml"))
GOOD = sorted((ROOT / "experiments").glob("*.yaml"))

MINIMAL = "name: tiny\nduration: 30s\n"


def _expectations(path: Path) -> list[tuple[int, str]]:
    """The file's `# expect: LINE FRAGMENT` lines (some files are binary or not UTF-8 after them)."""
    out = []
    for line in path.read_bytes().decode("utf-8", "replace").splitlines():
        m = re.match(r"# expect: (\d+) (.*)$", line)
        if m:
            out.append((int(m.group(1)), m.group(2)))
    return out


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_each_broken_file_reports_its_line_field_and_value(path: Path) -> None:
    expected = _expectations(path)
    assert expected, f"{path.name} declares no '# expect:' line"
    with pytest.raises(ValidationError) as info:
        load_experiment(path)
    rendered = [p.render() for p in info.value.problems]
    for line, fragment in expected:
        prefix = f"{path}:{line}:"
        assert any(r.startswith(prefix) and fragment in r for r in rendered), (
            f"no problem at line {line} containing {fragment!r}; got:\n" + "\n".join(rendered))


def test_one_file_with_several_errors_reports_all_of_them() -> None:
    with pytest.raises(ValidationError) as info:
        load_experiment(ROOT / "tests/data/bad_experiments/several_errors.yaml")
    assert len(info.value.problems) >= 4


@pytest.mark.parametrize("path", GOOD, ids=[p.stem for p in GOOD])
def test_every_shipped_experiment_validates(path: Path) -> None:
    """Every variant of every shipped experiment loads and fits CI (<= 90 s of experiment time; a migration to KRaft
    <= 240 s: it rolls every broker twice and every controller once, about 220 s under load on 2 cores)."""
    for exp in load_experiments(path):
        migrates = any(op.action == "migrate_to_kraft" for op in exp.operations)
        assert exp.duration <= (240 if migrates else 90), f"{exp.variant or exp.name}: shipped experiments must fit CI"


def test_minimal_experiment_gets_every_default() -> None:
    exp = load_experiment_text(MINIMAL, "mem.yaml")
    assert exp.cluster.brokers == 3 and exp.cluster.zookeepers == 1
    assert exp.seed == 1 and exp.drain == 10.0 and exp.verify.checks == ("all",)
    assert exp.steady_state == ("controller_present", "all_partitions_led")



def test_an_experiment_with_consumer_groups_waits_for_them_to_be_stable_unless_it_names_its_probes() -> None:
    groups = MINIMAL + "topics: [{name: t, partitions: 1}]\nworkload: {consumers: [{group: g, topics: [t]}]}\n"
    assert load_experiment_text(groups, "mem.yaml").steady_state == (
        "controller_present", "all_partitions_led", "group_stable")
    named = groups + "steady_state: [controller_present]\n"
    assert load_experiment_text(named, "mem.yaml").steady_state == ("controller_present",)

def test_durations_accept_units_and_round_trip() -> None:
    assert parse_duration("500ms") == 0.5
    assert parse_duration("1m30s") == 90.0
    assert parse_duration("2h") == 7200.0
    for text in ("500ms", "10s", "2m", "1h", "90s"):
        assert parse_duration(format_duration(parse_duration(text))) == parse_duration(text)
    for bad in ("", "10", "ten s", "5 parsecs", "10s5"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_plain_number_duration_is_rejected_with_a_hint() -> None:
    with pytest.raises(ValidationError, match=r"duration: must be a duration with a unit.*write e.g."):
        load_experiment_text("name: x\nduration: 30\n", "mem.yaml")


def test_acks_minus_one_means_all_and_idempotence_needs_acks_all() -> None:
    base = "name: x\nduration: 30s\ntopics: [{name: t}]\nworkload: {producers: [%s]}\n"
    exp = load_experiment_text(base % "{topic: t, acks: -1}", "m.yaml")
    assert exp.workload.producers[0].acks == "all" and exp.workload.producers[0].idempotence
    with pytest.raises(ValidationError, match="idempotence needs acks: all"):
        load_experiment_text(base % "{topic: t, acks: 1, idempotence: true}", "m.yaml")


def test_fault_params_are_typed_checked_and_defaulted() -> None:
    text = ("name: x\nduration: 60s\nschedule:\n"
            "  - {at: 1s, fault: latency, link: client->broker:1, duration: 5s, params: {latency_ms: 100}}\n")
    exp = load_experiment_text(text, "m.yaml")
    assert dict(exp.schedule[0].params) == {"latency_ms": 100, "jitter_ms": 0, "stream": "downstream",
                                            "toxicity": 1.0}
    with pytest.raises(ValidationError, match=r"params.latency_ms: required field is missing"):
        load_experiment_text(text.replace("latency_ms: 100", "jitter_ms: 1"), "m.yaml")
    with pytest.raises(ValidationError, match=r"params.latncy_ms: unknown key.*did you mean 'latency_ms'"):
        load_experiment_text(text.replace("latency_ms: 100", "latency_ms: 1, latncy_ms: 2"), "m.yaml")


def test_wrong_slot_and_wrong_role_are_reported() -> None:
    with pytest.raises(ValidationError, match=r"fault 'latency' takes `link`, not `target`"):
        load_experiment_text("name: x\nduration: 60s\nschedule:\n"
                             "  - {at: 1s, fault: latency, target: broker:1, duration: 5s}\n", "m.yaml")
    with pytest.raises(ValidationError, match=r"fault 'stop' cannot target a zookeeper"):
        load_experiment_text("name: x\nduration: 60s\nschedule:\n"
                             "  - {at: 1s, fault: stop, target: zookeeper:1}\n", "m.yaml")


def test_dynamic_targets_may_overlap_but_static_ones_may_not() -> None:
    ok = ("name: x\nduration: 60s\nschedule:\n  - {at: 1s, fault: kill, target: controller}\n"
          "  - {at: 5s, fault: kill, target: controller}\n")
    assert len(load_experiment_text(ok, "m.yaml").schedule) == 2
    with pytest.raises(ValidationError, match="overlaps fault #0"):
        load_experiment_text(ok.replace("controller", "broker:1"), "m.yaml")
    sequential = ("name: x\nduration: 60s\nschedule:\n  - {at: 1s, fault: kill, target: broker:1, duration: 3s}\n"
                  "  - {at: 5s, fault: kill, target: broker:1}\n")
    assert len(load_experiment_text(sequential, "m.yaml").schedule) == 2


def test_missing_file_is_a_validation_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match=r"nope\.yaml: <document>: cannot read the file"):
        load_experiment(tmp_path / "nope.yaml")


@pytest.mark.parametrize("kind", ["fifo", "symlink to a fifo", "directory"])
def test_a_file_that_is_not_regular_is_refused_at_once_instead_of_blocking(tmp_path: Path, kind: str) -> None:
    """A FIFO (or a symlink to one) as the experiment file blocked `validate` and `run` forever (issue 36)."""
    fifo = tmp_path / "f.yaml"
    if kind == "directory":
        fifo.mkdir()
    else:
        os.mkfifo(fifo)
    path = fifo if kind != "symlink to a fifo" else tmp_path / "link.yaml"
    if kind == "symlink to a fifo":
        path.symlink_to(fifo)
    started = time.monotonic()
    with pytest.raises(ValidationError) as err:
        load_experiment(path)
    assert time.monotonic() - started < 5
    assert "not a regular file but" in str(err.value) and str(path) in str(err.value)


@pytest.mark.parametrize("value", ["!!python/object/new:dict {brokers: 3}", "!!python/object/apply:os.system [ls]",
                                   "!!set {a: null}", "!custom [1, 2]"])
def test_a_tag_on_a_mapping_or_list_is_refused_at_its_line(value: str) -> None:
    """Such tags were dropped silently and the file validated (issue 36); nothing may be executed or ignored."""
    text = f"name: x\nduration: 10s\ncluster: {value}\n"
    with pytest.raises(ValidationError) as err:
        load_experiment_text(text, "t.yaml")
    problem = next(p for p in err.value.problems if "is not honoured" in p.message)
    assert problem.line == 3 and problem.field == "cluster"


def test_a_power_loss_may_name_several_nodes_which_round_trip_and_hold_each_for_the_overlap_rule() -> None:
    from harness.experiment.dump import dump_experiment

    text = ("name: x\nduration: 60s\ncluster: {brokers: 3}\nschedule:\n"
            "  - {at: 5s, fault: power_loss, targets: [broker:1, broker:2, broker:3], duration: 10s}\n")
    fault = load_experiment_text(text, "m.yaml").schedule[0]
    assert [str(t) for t in fault.targets] == ["broker:1", "broker:2", "broker:3"]
    assert str(fault.target) == "broker:1" and fault.nodes == fault.targets
    again = load_experiment_text(dump_experiment(load_experiment_text(text, "m.yaml")), "dumped.yaml")
    assert again.schedule[0].targets == fault.targets
    with pytest.raises(ValidationError, match=r"schedule\[1\].*overlaps fault #0 .* on broker:3"):
        load_experiment_text(text + "  - {at: 8s, fault: power_loss, target: broker:3}\n", "m.yaml")
