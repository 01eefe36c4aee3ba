"""Steady-state probes: named conditions on the observed cluster state, checked before chaos and
after heal. Each probe reads a `ClusterState` (built from history events) and says ok + detail."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from harness.history.state import ClusterState

Probe = Callable[[ClusterState], tuple[bool, str]]


def _controller_present(state: ClusterState) -> tuple[bool, str]:
    if state.voter_roles:
        roles = dict(sorted(state.voter_roles.items()))
        return state.controller_live, f"quorum leader={state.controller}, voters' roles={roles}"
    return state.controller_live, f"controller={state.controller}, live brokers={sorted(state.live_brokers)}"


def _brokers_registered(state: ClusterState) -> tuple[bool, str]:
    missing = sorted(set(state.expected_brokers) - state.live_brokers)
    return not missing, f"missing brokers: {missing}" if missing else "all brokers registered"


def _all_partitions_led(state: ClusterState) -> tuple[bool, str]:
    if not state.expected_partitions:
        return True, "no partitions declared"
    leaderless = [f"{t}/{p}" for (t, p) in sorted(state.expected_partitions)
                  if state.leader(t, p) is None or state.leader(t, p) not in state.live_brokers]
    return not leaderless, f"without a live leader: {leaderless[:10]}" if leaderless else "every partition led"


def _isr_full(state: ClusterState) -> tuple[bool, str]:
    short = [f"{t}/{p}" for (t, p) in sorted(state.expected_partitions)
             if (ps := state.partitions.get((t, p))) is None or set(ps.isr) != set(ps.replicas)]
    return not short, f"ISR smaller than replicas: {short[:10]}" if short else "every ISR full"


def _group_stable(state: ClusterState) -> tuple[bool, str]:
    unstable = {g: state.groups.get(g, "unknown") for g in state.expected_groups
                if state.groups.get(g) != "Stable"}
    return not unstable, f"not Stable: {unstable}" if unstable else "every group Stable"


PROBES: Mapping[str, tuple[Probe, str]] = MappingProxyType({
    "controller_present": (_controller_present, "one live broker holds /controller (KRaft: a voter answers as "
                                                "the quorum leader)"),
    "brokers_registered": (_brokers_registered, "every broker is registered in /brokers/ids"),
    "all_partitions_led": (_all_partitions_led, "every declared partition has a live leader"),
    "isr_full": (_isr_full, "every declared partition's ISR equals its replicas"),
    "group_stable": (_group_stable, "every declared consumer group is Stable"),
})
"""Probe name -> (function, description)."""
