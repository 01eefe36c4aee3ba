"""Who owned which partitions in which generation, reconstructed from assign/revoke events.

Owns `holdings`: per group member (its member id; the consumer's `src` when no id is recorded), so
that a restarted consumer or one fenced into a new member id starts with nothing, since a killed
incarnation never revokes (SIGKILL), and its partitions go elsewhere with the next generation; the
partitions it held right after each
`assign` (union of assigns minus revokes, which is right for both the eager protocol — revoke
everything, assign the full set — and the cooperative one — incremental assign/revoke), keyed
by (group, generation, incarnation): a generation numbered again after its coordinator's stored record was
truncated (`cut`: whether a truncation took back what a group stored at one time by a later one,
`permits.truncated_between`) is a new incarnation, judged on its own. Also the partition count of every topic,
from `partition.state` events (highest partition + 1), else from what assignments mention; and the count one
generation is judged against when `add_partitions` grew a topic during the run (`generation_counts`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from spark_analysis.checks.shared.common import TopicPartition, as_partitions


@dataclass(frozen=True, slots=True)
class Holding:
    """One consumer's partitions right after an assign in `generation`."""

    group: str
    generation: int
    src: str
    member: str
    partitions: frozenset[TopicPartition]
    event: Mapping[str, Any]


class Generation(NamedTuple):
    """One generation of a group; `incarnation` counts how often its number was given again after a truncation."""

    group: str
    generation: int
    incarnation: int = 0

    def label(self) -> str:
        again = f" (numbered again after a truncation, incarnation {self.incarnation + 1})" if self.incarnation else ""
        return f"generation {self.generation}{again}"


def _no_cut(_group: str, _stored: float, _read: float) -> bool:
    return False


def holdings(events: Iterable[Mapping[str, Any]],
             cut: Callable[[str, float, float], bool] = _no_cut) -> dict[Generation, dict[str, Holding]]:
    """Generation -> member -> Holding (the last assign of that member in that generation). An assign in a
    generation whose previous assign's record a truncation of the group's coordinator partition may have taken back
    by then (`cut(group, previous assign's t, t)`) starts that generation's next incarnation."""
    held: dict[tuple[str, str], set[TopicPartition]] = defaultdict(set)
    out: dict[Generation, dict[str, Holding]] = defaultdict(dict)
    latest: dict[tuple[str, int], tuple[int, float]] = {}  # (group, generation) -> (incarnation, its last assign)
    for ev in events:
        group = str(ev.get("group"))
        src = str(ev.get("src"))
        member = str(ev.get("member") or src)
        parts = as_partitions(ev.get("partitions"))
        if ev.get("type") == "revoke":
            held[(group, member)].difference_update(parts)
        elif ev.get("type") == "assign":
            held[(group, member)].update(parts)
            if ev.get("generation") is None:
                continue
            gen = int(ev["generation"])
            t = float(ev.get("t") or 0.0)
            seen = latest.get((group, gen))
            incarnation = 0 if seen is None else seen[0] + int(cut(group, seen[1], t))
            latest[(group, gen)] = (incarnation, t)
            out[Generation(group, gen, incarnation)][member] = Holding(group, gen, src, member,
                                                                       frozenset(held[(group, member)]), ev)
    return out


def topic_partition_counts(
    partition_states: Iterable[Mapping[str, Any]], assignments: Iterable[Holding] = ()
) -> dict[str, int]:
    counts: dict[str, int] = {}
    for ev in partition_states:
        if ev.get("topic") is not None and ev.get("partition") is not None:
            counts[str(ev["topic"])] = max(counts.get(str(ev["topic"]), 0), int(ev["partition"]) + 1)
    for h in assignments:
        for topic, part in h.partitions:
            if topic not in counts or counts[topic] <= part:
                counts[topic] = max(counts.get(topic, 0), part + 1)
    return counts


def base_partition_counts(partition_states: Iterable[Mapping[str, Any]],
                          grown_at: Mapping[str, float]) -> dict[str, int]:
    """Partitions per topic from `partition.state` events; for a topic that an `add_partitions` grew (its
    first start in `grown_at`), only the events before that count: its partitions before the growth."""
    return topic_partition_counts(ev for ev in partition_states
                                  if float(ev.get("t") or 0.0) < grown_at.get(str(ev.get("topic")), float("inf")))


def generation_counts(base: Mapping[str, int], members: Iterable[Holding]) -> dict[str, int]:
    """The partition count a generation is judged against, per topic: the count before any growth, raised to
    cover the partitions its members hold (added partitions count once the group has taken one of them: a
    group cannot be faulted for partitions its leader's metadata did not show yet)."""
    out = dict(base)
    for h in members:
        for topic, part in h.partitions:
            out[topic] = max(out.get(topic, 0), part + 1)
    return out
