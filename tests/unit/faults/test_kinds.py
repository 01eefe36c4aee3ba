"""Each fault kind of the catalogue applies, heals and describes itself: the injector carries it out on a fake
cluster and records in `fault.start` the kind's effect as data (nodes down, nodes cut off, links cut, toxics),
besides the fields it always had."""

from __future__ import annotations

from typing import Any

import pytest

from harness.cluster.base import LinkSource, NodeId, link_name
from harness.cluster.links import LinkGraph
from harness.experiment import load_experiment_text
from harness.faults.catalog import CATALOG
from harness.faults.inject import FaultInjector
from harness.faults.kind import KindSpec
from harness.faults.schedule import plan
from harness.history.jsonl import record_of
from harness.history.state import ClusterState

HEAD = """name: k
duration: 30s
topics: [{name: t}]
cluster: {brokers: 3, log_dir_mb: 64, security: {sasl: scram-sha-512}}
workload:
  consumers: [{group: g, topics: [t], members: 2}]
schedule:
  - """


class FakeLink:
    def __init__(self, name: str, calls: list[str]) -> None:
        self.name, self.calls = name, calls

    def disable(self) -> None:
        self.calls.append(f"disable {self.name}")

    def enable(self) -> None:
        self.calls.append(f"enable {self.name}")

    def add_toxic(self, kind: str, attributes: dict[str, Any], *, stream: str, toxicity: float, name: str) -> str:
        self.calls.append(f"toxic {self.name} {kind} {sorted(attributes.items())} {stream} {toxicity}")
        return name

    def remove_toxic(self, name: str) -> None:
        self.calls.append(f"remove {self.name} {name}")


class FakeCluster:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __getattr__(self, action: str) -> Any:
        if action in ("kill", "stop", "pause", "resume", "start"):
            return lambda node: self.calls.append(f"{action} {node}")
        raise AttributeError(action)

    def link(self, src: LinkSource, dst: NodeId) -> FakeLink:
        return FakeLink(link_name(src, dst), self.calls)


class FakeMembers:
    def __init__(self, calls: list[str]) -> None:
        self.calls = calls

    def __getattr__(self, action: str) -> Any:
        return lambda n: self.calls.append(f"{action} {n}")


def _run(entry: str) -> tuple[list[dict[str, Any]], list[str]]:
    (fault,) = plan(load_experiment_text(HEAD + entry + "\n", "mem.yaml"))
    cluster = FakeCluster()
    events: list[dict[str, Any]] = []
    injector = FaultInjector(cluster, ClusterState(), LinkGraph((1, 2, 3), (1,)),  # type: ignore[arg-type]
                             lambda e: events.append(record_of(e)),
                             members={"g": FakeMembers(cluster.calls)})  # type: ignore[dict-item]
    assert injector.inject(fault)
    injector.heal(fault)
    return events, cluster.calls


def test_every_catalogue_kind_names_itself_by_its_key() -> None:
    for name, kind in CATALOG.items():
        assert isinstance(kind.spec, KindSpec) and kind.spec.name == name


def test_kill_takes_a_broker_down_abruptly_and_the_heal_starts_it() -> None:
    events, calls = _run("{at: 1s, fault: kill, target: 'broker:2', duration: 5s}")
    start = events[0]
    assert calls == ["kill broker:2", "start broker:2"]
    assert (start["type"], start["target"], start["brokers"], start["heal"]) == (
        "fault.start", ["broker:2"], [2], "starts the node again")
    assert start["effect"] == {"nodes": [{"role": "broker", "id": 2}], "down": True, "graceful": False,
                               "unreachable": [], "links": [], "toxics": [], "clocks": [], "lost": []}
    assert "effect" not in events[1]


def test_stop_is_graceful_and_pause_of_a_consumer_member_names_the_member() -> None:
    events, calls = _run("{at: 1s, fault: stop, target: 'broker:1', duration: 5s}")
    assert calls == ["stop broker:1", "start broker:1"] and events[0]["effect"]["graceful"] is True
    events, calls = _run("{at: 1s, fault: pause, target: 'consumer:g/1', duration: 5s}")
    assert calls == ["pause_member 1", "resume_member 1"]
    assert events[0]["effect"]["nodes"] == [{"role": "consumer", "id": "g/1"}] and events[0]["effect"]["down"]


def test_isolate_cuts_every_link_of_the_broker_and_names_it_unreachable_from_clients_and_peers() -> None:
    events, calls = _run("{at: 1s, fault: isolate, target: 'broker:3', duration: 5s}")
    effect = events[0]["effect"]
    proxies = [x["proxy"] for x in effect["links"]]
    assert set(proxies) == {"3->zk1", "3->1", "1->3", "3->2", "2->3", "client->3"}
    assert effect["unreachable"] == [{"role": "broker", "id": 3, "from": ["broker", "client", "zookeeper"]}]
    assert effect["down"] is False and effect["nodes"] == [{"role": "broker", "id": 3}]
    assert sorted(c for c in calls if c.startswith("disable")) == sorted(f"disable {p}" for p in proxies)
    assert sorted(c for c in calls if c.startswith("enable")) == sorted(f"enable {p}" for p in proxies)


def test_isolate_zookeeper_and_partition_name_the_peers_each_node_lost() -> None:
    events, _ = _run("{at: 1s, fault: isolate_zookeeper, target: 'broker:1', duration: 5s}")
    assert events[0]["effect"]["unreachable"] == [{"role": "broker", "id": 1, "from": ["zookeeper"]}]
    events, _ = _run("{at: 1s, fault: partition, groups: [['broker:1'], ['broker:2', 'broker:3']], duration: 5s}")
    effect = events[0]["effect"]
    assert effect["unreachable"] == [{"role": "broker", "id": b, "from": ["broker"]} for b in (1, 2, 3)]
    assert {x["proxy"] for x in effect["links"]} == {"1->2", "1->3", "2->1", "3->1"}


KRAFT_HEAD = """name: k
duration: 30s
topics: [{name: t}]
cluster: {mode: kraft, brokers: 3, controllers: 3}
schedule:
  - """


def test_isolate_from_voters_cuts_the_quorum_leader_off_from_the_other_voters_only() -> None:
    (fault,) = plan(load_experiment_text(KRAFT_HEAD + "{at: 1s, fault: isolate, target: controller, duration: 5s, "
                                         "params: {from: voters}}\n", "mem.yaml"))
    cluster = FakeCluster()
    events: list[dict[str, Any]] = []
    injector = FaultInjector(cluster, ClusterState(controller=102), LinkGraph((1, 2, 3), (), (101, 102, 103)),  # type: ignore[arg-type]
                             lambda e: events.append(record_of(e)))
    assert injector.inject(fault)
    injector.heal(fault)
    effect = events[0]["effect"]
    assert effect["nodes"] == [{"role": "controller", "id": 102}]
    assert effect["unreachable"] == [{"role": "controller", "id": 102, "from": ["controller"]}]
    links = {(x["src"], x["dst"]) for x in effect["links"]}
    assert links and all("controller:102" in pair and all(e.startswith("controller:") for e in pair) for pair in links)
    assert {"controller:101", "controller:103"} <= {e for pair in links for e in pair}


@pytest.mark.parametrize(("head", "target"), [(KRAFT_HEAD, "'broker:1'"), (HEAD, "controller")])
def test_isolate_from_voters_is_refused_off_a_kraft_controller_naming_the_field(head: str, target: str) -> None:
    from harness.errors import ValidationError

    with pytest.raises(ValidationError, match=r"schedule\[0\]\.params\.from"):
        load_experiment_text(head + f"{{at: 1s, fault: isolate, target: {target}, duration: 5s, "
                             "params: {from: voters}}\n", "mem.yaml")


def test_cut_and_a_toxic_name_links_only() -> None:
    events, calls = _run("{at: 1s, fault: cut, link: 'broker:1->broker:2', duration: 5s}")
    assert events[0]["effect"]["links"] == [{"src": "broker:1", "dst": "broker:2", "proxy": "1->2"}]
    assert events[0]["effect"]["nodes"] == [] and events[0]["effect"]["unreachable"] == []
    assert calls == ["disable 1->2", "enable 1->2"]
    events, calls = _run("{at: 1s, fault: latency, link: 'client->broker:2', duration: 5s, "
                         "params: {latency_ms: 100, jitter_ms: 5}}")
    assert events[0]["effect"]["toxics"] == [{"type": "latency", "stream": "downstream", "toxicity": 1.0,
                                              "attributes": {"latency": 100, "jitter": 5}, "links": ["client->2"]}]
    assert calls == ["toxic client->2 latency [('jitter', 5), ('latency', 100)] downstream 1.0",
                     "remove client->2 f0-latency-downstream"]


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_every_kind_describes_an_effect_with_every_key(name: str) -> None:
    from harness.faults.kind import Applied

    kind = CATALOG[name]
    (fault,) = plan(load_experiment_text(HEAD + _entry(name) + "\n", "mem.yaml"))
    assert set(kind.describe(fault, Applied())) == {"nodes", "down", "graceful", "unreachable", "links", "toxics",
                                                    "clocks", "lost"}


def _entry(name: str) -> str:
    spec = CATALOG[name].spec
    required = {p.name: 1 for p in spec.params if p.required}
    slot = ("link: 'broker:1->broker:2'" if "link" in spec.targets else "groups: [['broker:1'], ['broker:2']]"
            if "groups" in spec.targets else "target: 'zookeeper:1'" if spec.targets == {"zookeeper"}
            else "target: 'consumer:g/0'" if "broker" not in spec.targets else "target: 'broker:1'")
    return f"{{at: 1s, fault: {name}, {slot}, duration: 5s, params: {required}}}"


def _teardown(*entries: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Inject `entries`, then end them as a teardown does (`heal_all(teardown=True)`)."""
    faults = plan(load_experiment_text(HEAD + "\n  - ".join(entries) + "\n", "mem.yaml"))
    cluster = FakeCluster()
    events: list[dict[str, Any]] = []
    injector = FaultInjector(cluster, ClusterState(), LinkGraph((1, 2, 3), (1,)),  # type: ignore[arg-type]
                             lambda e: events.append(record_of(e)),
                             members={"g": FakeMembers(cluster.calls)})  # type: ignore[dict-item]
    for fault in faults:
        assert injector.inject(fault)
    assert injector.heal_all(teardown=True) == []
    return events, cluster.calls


def test_a_teardown_leaves_killed_and_stopped_brokers_down_and_still_resumes_and_reconnects_the_rest() -> None:
    """A signalled run's teardown stops every node next: starting a killed broker first only delays the exit."""
    events, calls = _teardown("{at: 1s, fault: kill, target: broker:1}", "{at: 2s, fault: stop, target: broker:2}",
                              "{at: 3s, fault: pause, target: broker:3, duration: 5s}",
                              "{at: 4s, fault: isolate, target: broker:3, duration: 5s}")
    assert not [c for c in calls if c.startswith("start")], calls
    assert "resume broker:3" in calls and any(c.startswith("enable") for c in calls), calls
    ends = {e["description"]: e for e in events if e["type"] == "fault.end"}
    assert len(ends) == 4
    left = sorted(d for d, e in ends.items() if e.get("left_down"))
    assert left == ["#0 kill broker:1", "#1 stop broker:2"], ends


def test_overlapping_kills_of_one_broker_start_it_at_the_last_heal_not_at_the_first() -> None:
    """Explore on 3.9.2: `kill controller` (broker 1 then) at 11.6 s for 12 s and `kill broker:1` at 16.7 s for 8 s;
    the first heal started the broker while the second still held it down, whose heal then failed `already
    running`. The node holds count: the first heal leaves it down, the last one starts it, and no heal fails."""
    text = HEAD + "{at: 1s, fault: kill, target: controller, duration: 12s}\n  - " \
        "{at: 2s, fault: stop, target: 'broker:1', duration: 8s}\n  - " \
        "{at: 3s, fault: kill, target: 'broker:2', duration: 2s}\n"
    first, second, other = plan(load_experiment_text(text, "mem.yaml"))  # the loader cannot tell they overlap
    cluster = FakeCluster()
    events: list[dict[str, Any]] = []
    state = ClusterState(controller=1, live_brokers={1, 2, 3})
    injector = FaultInjector(cluster, state, LinkGraph((1, 2, 3), (1,)),  # type: ignore[arg-type]
                             lambda e: events.append(record_of(e)))
    for fault in (first, second, other):
        assert injector.inject(fault)
    injector.heal(other)
    injector.heal(first)  # the stop still holds broker 1 down
    assert cluster.calls == ["kill broker:1", "stop broker:1", "kill broker:2", "start broker:2"]
    injector.heal(second)
    assert cluster.calls[-1] == "start broker:1" and cluster.calls.count("start broker:1") == 1
    assert not [e for e in events if e["type"] == "fault.end" and e.get("error")]
