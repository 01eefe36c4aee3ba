"""Replica assignment of new topics as Kafka computes it (AdminUtils.assignReplicasToBrokers, rack-unaware).

Pure: brokers sorted; a start index and a replica shift (random unless given); partition p's first
replica is broker[(p + start) % n]; the others follow at (first + 1 + (shift + j) % (n - 1)) % n,
the shift growing by one every n partitions, so leaders and followers spread evenly.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from harness.errors import HarnessError


class AssignmentError(HarnessError):
    """A replica assignment is impossible (replication factor larger than the brokers)."""


def assign_replicas(brokers: Iterable[int], partitions: int, replication_factor: int,
                    start_index: int | None = None, replica_shift: int | None = None,
                    rng: random.Random | None = None) -> dict[int, tuple[int, ...]]:
    ids = sorted(set(brokers))
    n = len(ids)
    if partitions <= 0 or replication_factor <= 0:
        raise AssignmentError(f"assignment: partitions {partitions} and replication factor {replication_factor} "
                              f"must be positive")
    if replication_factor > n:
        raise AssignmentError(f"assignment: replication factor {replication_factor} larger than available "
                              f"brokers {n}")
    r = rng or random.Random()
    start = r.randrange(n) if start_index is None else start_index
    shift = r.randrange(n) if replica_shift is None else replica_shift
    out: dict[int, tuple[int, ...]] = {}
    for p in range(partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [ids[first]]
        for j in range(replication_factor - 1):
            replicas.append(ids[(first + 1 + (shift + j) % (n - 1)) % n])
        out[p] = tuple(replicas)
    return out
