"""Fuzzing the loader: whatever it is fed (random bytes, YAML-like token soup, random YAML trees, valid
experiments with one field replaced by a hostile value), it returns experiments or raises
`ValidationError`, never anything else, and each case takes at most `CASE_BOUND_S`. Experiments that
load are taken through what `run` does with its input before any process starts (the resolved
`experiment.yaml` read back, the fault plan, every broker's server.properties), which must not fail.

Deterministic (`derandomize=True`, no example database): CI runs the same cases every time. The slowest
case of each test is printed (`-s` shows it, or the run's output when it fails).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cluster.render import (
    HostPort,
    ProxyRoute,
    Topology,
    ZooKeeperEndpoint,
    broker_listeners,
    plan_routes,
    render_server_properties,
)
from harness.engine.backend_needs import cluster_spec
from harness.errors import ValidationError
from harness.experiment import load_experiment_text, load_experiments, load_experiments_text
from harness.experiment.dump import dump_experiment
from harness.experiment.schema import Experiment
from harness.faults.schedule import actions, plan

CASE_BOUND_S = 2.0
"""Generous on purpose: a loaded 2-core CI machine must not flake; a regression to a stall is far above."""

FUZZ = settings(max_examples=300, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

BASE: dict[str, Any] = {
    "name": "fuzz",
    "seed": 7,
    "cluster": {"brokers": 3, "zookeepers": 1, "broker_config": {"min.insync.replicas": 2}},
    "topics": [{"name": "orders", "partitions": 3, "replication_factor": 3}],
    "workload": {"producers": [{"topic": "orders", "rate": 100, "acks": "all", "keys": 20}],
                 "consumers": [{"group": "billing", "topics": ["orders"], "members": 2}]},
    "schedule": [{"at": "10s", "fault": "kill", "target": "controller", "duration": "15s"},
                 {"at": "35s", "fault": "latency", "link": "client->leader:orders/0",
                  "params": {"latency_ms": 300}, "duration": "10s"}],
    "duration": "60s",
    "verify": {"checks": ["all"], "slo": {"controller_failover": "15s"}},
}
"""A valid experiment (asserted below); the structured strategy replaces one of its fields."""

FIELDS: tuple[tuple[str | int, ...], ...] = (
    ("name",), ("seed",), ("duration",), ("drain",), ("steady_timeout",), ("steady_state",), ("description",),
    ("cluster",), ("cluster", "brokers"), ("cluster", "zookeepers"), ("cluster", "kafka"), ("cluster", "broker"),
    ("cluster", "broker_config"), ("cluster", "broker_config", "listeners"), ("cluster", "images"),
    ("cluster", "reference_bugs"), ("topics",), ("topics", 0, "name"), ("topics", 0, "partitions"),
    ("topics", 0, "replication_factor"), ("topics", 0, "config"), ("workload",), ("workload", "producers", 0),
    ("workload", "producers", 0, "rate"), ("workload", "producers", 0, "keys"), ("workload", "producers", 0, "id"),
    ("workload", "producers", 0, "acks"), ("workload", "consumers", 0, "members"),
    ("workload", "consumers", 0, "topics"), ("workload", "consumers", 0, "group"), ("schedule",),
    ("schedule", 0), ("schedule", 0, "at"), ("schedule", 0, "target"), ("schedule", 0, "duration"),
    ("schedule", 0, "jitter"), ("schedule", 1, "link"), ("schedule", 1, "params"),
    ("schedule", 1, "params", "latency_ms"), ("schedule", 1, "params", "toxicity"), ("verify",),
    ("verify", "slo", "controller_failover"), ("matrix",),
)

NASTY_SCALARS = st.one_of(
    st.none(), st.booleans(),
    st.integers(), st.sampled_from([0, -1, 1, 2**31, 2**63, 10**20, 10**99, -(10**30)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
    st.sampled_from(["", "10s", "0s", "1h", "25h", "100000000000000000000s", "9" * 70 + "ms", "1m30s", "-5s",
                     "broker:1", "broker:²", "broker:" + "9" * 5000, "leader:orders/9", "consumer:billing/1",
                     "client->broker:1", "broker:1->broker:1", "all", "3.9", "4.0", "7.7.1", "__consumer_offsets",
                     ".", "kill", "latency", "a\nb", "x" * 300, "listeners", "log.dirs"]),
)
TREES = st.recursive(NASTY_SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=5),
    st.dictionaries(st.one_of(st.text(max_size=12), st.sampled_from(["name", "duration", "brokers", "at", "fault",
                                                                      "target", "params", "listeners", "rate"])),
                    children, max_size=5)), max_leaves=25)

TOKENS = st.sampled_from([
    "[", "]", "{", "}", ",", ":", ": ", "- ", "? ", "\n", "  ", "\t", "&a ", "*a", "&b ", "*b", "!!int ", "!!binary ",
    "!!python/object:os.system ", "!foo ", "<<: ", "---\n", "...\n", "'", '"', "#", "|\n", ">\n", "name", "duration",
    "10s", "1e400", ".nan", ".inf", "2001-02-30", "1:2:3", "0x1F", "~", "\x00", "\x01", "\u0085", "\ufeff",
    "é", "\ud800", "9" * 120, "cluster", "brokers", "schedule", "matrix", "seed",
])


@dataclass
class Timing:
    """The slowest case seen, and how many ran."""

    cases: int = 0
    slowest_s: float = 0.0
    slowest: str = ""
    outcomes: dict[str, int] = field(default_factory=dict)

    def run(self, what: object, load: Callable[[], tuple[Experiment, ...]]) -> None:
        start = time.perf_counter()
        try:
            exps = load()
        except ValidationError as exc:
            assert exc.problems, "a ValidationError carries at least one problem"
            outcome = "invalid"
        else:  # any other exception fails the test, with hypothesis' minimal example
            assert exps and all(isinstance(e, Experiment) for e in exps)
            outcome = "valid"
        took = time.perf_counter() - start
        if outcome == "valid":
            for exp in exps:
                run_side(exp)
        self.cases += 1
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if took > self.slowest_s:
            self.slowest_s, self.slowest = took, repr(what)[:160]
        assert took < CASE_BOUND_S, f"one case took {took:.2f}s (> {CASE_BOUND_S}s): {what!r:.300}"

    def report(self, name: str, capsys: pytest.CaptureFixture[str]) -> None:
        with capsys.disabled():
            print(f"\n{name}: {self.cases} cases {self.outcomes}, slowest {self.slowest_s * 1000:.1f} ms: "
                  f"{self.slowest}")


def run_side(exp: Experiment) -> None:
    """What `run` does with a valid spec before starting processes; none of it may fail."""
    again = load_experiment_text(dump_experiment(exp), exp.source)
    assert again.schedule == exp.schedule and again.cluster == exp.cluster
    actions(plan(exp))
    spec = cluster_spec(exp)
    n, ports = spec.brokers, iter(range(20_000, 30_000))
    brokers = tuple(broker_listeners(k, n, "127.0.0.1", [next(ports) for _ in range(n + 1)]) for k in range(1, n + 1))
    zks = tuple(ZooKeeperEndpoint(i, "127.0.0.1", next(ports)) for i in range(1, spec.zookeepers + 1))
    proxies = tuple(ProxyRoute.of(r, HostPort("127.0.0.1", next(ports))) for r in plan_routes(brokers, zks))
    topology = Topology(brokers, zks, proxies)
    for k in range(1, n + 1):
        render_server_properties(topology, k, log_dirs="/tmp/data", overrides=spec.broker_config)


def test_the_base_experiment_is_valid() -> None:
    assert load_experiments_text(yaml.safe_dump(BASE), "base.yaml")[0].name == "fuzz"


def test_random_bytes_from_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    timing = Timing()
    path = tmp_path / "fuzz.yaml"

    @FUZZ
    @given(st.one_of(st.binary(max_size=4000), st.lists(TOKENS, max_size=300).map(
        lambda parts: "".join(parts).encode("utf-8", "surrogatepass"))))
    def case(data: bytes) -> None:
        path.write_bytes(data)
        timing.run(data, lambda: load_experiments(path))

    case()
    timing.report("random bytes", capsys)
    assert timing.cases >= 300


def test_random_text(capsys: pytest.CaptureFixture[str]) -> None:
    timing = Timing()

    @FUZZ
    @given(st.one_of(st.lists(TOKENS, max_size=300).map("".join), st.text(max_size=2000)))
    def case(text: str) -> None:
        timing.run(text, lambda: load_experiments_text(text, "fuzz.yaml"))

    case()
    timing.report("random text", capsys)


def test_random_yaml_trees(capsys: pytest.CaptureFixture[str]) -> None:
    timing = Timing()

    @FUZZ
    @given(TREES)
    def case(tree: object) -> None:
        text = yaml.safe_dump(tree, allow_unicode=True)
        timing.run(text, lambda: load_experiments_text(text, "fuzz.yaml"))

    case()
    timing.report("random YAML trees", capsys)


def _replace(doc: dict[str, Any], path: tuple[str | int, ...], value: object) -> None:
    node: Any = doc
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value


def test_a_valid_experiment_with_one_hostile_field(capsys: pytest.CaptureFixture[str]) -> None:
    timing = Timing()

    @FUZZ
    @given(st.sampled_from(FIELDS), TREES, st.booleans())
    def case(path: tuple[str | int, ...], value: object, share: bool) -> None:
        doc = yaml.safe_load(yaml.safe_dump(BASE))
        _replace(doc, path, value)
        if share and isinstance(value, (list, dict)):
            doc["description"] = value  # the same object twice: safe_dump writes an anchor and an alias
        text = yaml.safe_dump(doc, allow_unicode=True)
        timing.run((path, value), lambda: load_experiments_text(text, "fuzz.yaml"))

    case()
    timing.report("one hostile field", capsys)


PROPERTY = st.from_regex(r"[a-z][a-z0-9]{0,8}(\.[a-z0-9_-]{1,8}){0,3}", fullmatch=True)


@st.composite
def near_valid(draw: st.DrawFn) -> dict[str, Any]:
    """Experiments drawn inside (and just past) the run limits, so that most of them load."""
    brokers = draw(st.integers(1, 10))
    partitions = draw(st.integers(1, 1001))
    exp: dict[str, Any] = {
        "name": "fuzz", "seed": draw(st.integers(0, 2**63)),
        "duration": draw(st.sampled_from(["1s", "90s", "24h", "1441m", "500ms"])),
        "steady_timeout": draw(st.sampled_from(["1s", "60s", "24h", "0s"])),
        "cluster": {"brokers": brokers, "zookeepers": draw(st.sampled_from([1, 3, 5, 7])),
                    "broker": draw(st.sampled_from(["auto", "reference", "apache-kafka"])),
                    "broker_config": draw(st.dictionaries(PROPERTY, st.one_of(
                        st.integers(-5, 2**40), st.booleans(), st.text(max_size=10)), max_size=4))},
        "topics": [{"name": "t", "partitions": partitions,
                    "replication_factor": draw(st.integers(1, max(1, brokers)))}],
        "workload": {"producers": [{"topic": "t", "rate": draw(st.floats(0.001, 10_001)),
                                    "keys": draw(st.integers(0, 1_000_001))}],
                     "consumers": [{"group": "g", "topics": ["t"], "members": draw(st.integers(1, 33))}]},
    }
    fault = draw(st.sampled_from([
        {"at": "0s", "fault": "kill", "target": "random-broker", "jitter": "500ms"},
        {"at": "0s", "fault": "latency", "link": f"client->broker:{brokers}", "duration": "1s",
         "params": {"latency_ms": draw(st.integers(0, 86_400_001)), "toxicity": draw(st.floats(0, 1.1))}},
        {"at": "0s", "fault": "partition", "groups": [["broker:1"], ["zookeeper:1"]], "duration": "1s"},
        {"at": "0s", "fault": "pause", "target": f"leader:t/{partitions - 1}", "duration": "1s"},
    ]))
    exp["schedule"] = [fault]
    return exp


def test_experiments_near_the_limits_load_and_run_side_steps_accept_them(capsys: pytest.CaptureFixture[str]) -> None:
    timing = Timing()

    @FUZZ
    @given(near_valid())
    def case(doc: dict[str, Any]) -> None:
        text = yaml.safe_dump(doc, allow_unicode=True)
        timing.run(doc, lambda: load_experiments_text(text, "fuzz.yaml"))

    case()
    timing.report("near the limits", capsys)
    assert timing.outcomes.get("valid", 0) >= 30, timing.outcomes
