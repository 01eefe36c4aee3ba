"""What a run asks of its backend, read from the experiment alone: the cluster spec the run brings up
(`cluster_spec`), and what of the experiment only the process backend can run (`needs_process_backend`)."""

from __future__ import annotations

import dataclasses

from harness.cluster.base import ClusterSpec
from harness.cluster.render_kraft import kraft_cluster_id
from harness.experiment.schema import Experiment


def cluster_spec(exp: Experiment) -> ClusterSpec:
    """The experiment's cluster with what the run sets: its cluster id (from the seed), the releases its upgrades roll
    onto, fake clocks when a clock_skew
    fault will step them, and log directories on the power-loss filesystem when a power_loss or disk_error fault will
    act on them."""
    return dataclasses.replace(exp.cluster, cluster_id=kraft_cluster_id(exp.seed),
                               releases=tuple(op.to for op in exp.operations if op.to is not None),
                               fake_clocks=any(f.kind == "clock_skew" for f in exp.schedule),
                               lazy_fs=any(f.kind in ("power_loss", "disk_error") for f in exp.schedule))


def needs_process_backend(exp: Experiment) -> str:
    """What of `exp` only the process backend runs (`choose_backend`'s `process_only`), or ""."""
    from harness.cluster.select import process_only
    from harness.faults.catalog import CATALOG, OPERATIONS

    kinds = sorted({f.kind for f in exp.schedule
                    if CATALOG[f.kind].spec.backends.get("containers", "").startswith("not available")})
    actions = list(dict.fromkeys(op.action for op in exp.operations  # in schedule order
                                 if OPERATIONS[op.action].how.get("containers", "").startswith("not available")))
    return (process_only(exp.cluster) or (f"the {', '.join(kinds)} fault" if kinds else "")
            or (f"the {', '.join(actions)} operation" if actions else ""))
