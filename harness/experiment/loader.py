"""The experiment loader: the only place that reads experiment YAML.

`load_experiment(path)` parses with line tracking, expands a `matrix:` into variants (matrix.py),
builds the frozen `Experiment`, runs the cross-field rules, and raises one `ValidationError` listing
every problem (file:line:column, field path, bad value, nearest valid key) — or returns the spec
with every default filled in. It raises nothing else, whatever the file holds: the input limits
(limits.py, guard.py) refuse binary, non-UTF-8, huge, deeply nested and alias-bomb files before a
Python object is built, and the run limits refuse every value `run` would refuse after starting
processes.
"""

from __future__ import annotations

import dataclasses
import os
import re
import stat
from typing import Any

from harness.errors import Problem, ValidationError
from harness.experiment.cluster_fields import read_cluster
from harness.experiment.expect_spec import read_expect
from harness.experiment.explore_spec import read_explore
from harness.experiment.fields import MISSING, Fields, count_items, did_you_mean
from harness.experiment.guard import decode
from harness.experiment.limits import (
    MAX_FILE_BYTES,
    MAX_MATRIX_NODES,
    MAX_PARTITIONS,
    MAX_PROBLEMS,
    MAX_RUN_NAME_CHARS,
    MAX_SEED,
    MAX_TOPICS,
)
from harness.experiment.matrix import Variant, apply_variant, read_axes, variants
from harness.experiment.migration_rules import check_migration
from harness.experiment.release_rules import check_release
from harness.experiment.rules import check_rules
from harness.experiment.schedule_spec import read_schedule
from harness.experiment.schema import (
    CHECK_FAMILIES,
    CHECK_IDS,
    Experiment,
    SloSpec,
    TopicSpec,
    VerifySpec,
    default_steady_state,
    frozen_map,
)
from harness.experiment.upgrade_rules import check_upgrades
from harness.experiment.workload_spec import read_workload
from harness.experiment.yamlsource import Path, parse_located
from harness.history.probes import PROBES
from harness.model.topic_configs import config_problem

TOP_KEYS = ("name", "description", "seed", "cluster", "topics", "workload", "steady_state",
            "steady_timeout", "schedule", "duration", "drain", "verify", "expect", "explore")
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,200}$")
_KAFKA_INTERNAL_TOPICS = (".", "..", "__consumer_offsets", "__transaction_state", "__cluster_metadata")


def _read(path: str | os.PathLike[str]) -> tuple[str, str]:
    """The file's text: at most `MAX_FILE_BYTES` are read, and it must be UTF-8 without NUL bytes."""
    name = os.fspath(path)
    try:
        kind = _not_regular(os.stat(name).st_mode)
        if kind:  # a FIFO would block the read forever, a device never end: refuse before opening
            raise ValidationError([Problem(name, None, None, "", f"not a regular file but {kind}; an experiment is "
                                                                 "a YAML file")])
        with open(name, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ValidationError([Problem(name, None, None, "", f"cannot read the file: {exc.strerror}")]) from exc
    text, problems = decode(data, name)
    if problems:
        raise ValidationError(problems)
    return text, name


def _not_regular(mode: int) -> str | None:
    """What a file that is not a regular one is (a symlink is followed first), or None for a regular file."""
    for test, kind in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISDIR, "a directory"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


def load_experiment(path: str | os.PathLike[str], variant: str | None = None) -> Experiment:
    """Load and validate one experiment file; raises `ValidationError` with every problem found.

    A file with a `matrix:` holds several variants: name one (`variant`, as in `Experiment.variant`).
    """
    text, name = _read(path)
    return load_experiment_text(text, name, variant)


def load_experiments(path: str | os.PathLike[str]) -> tuple[Experiment, ...]:
    """Every variant of an experiment file (one, without a `matrix:`), in matrix order."""
    text, name = _read(path)
    return load_experiments_text(text, name)


def load_experiment_text(text: str, file: str = "<string>", variant: str | None = None) -> Experiment:
    exps = load_experiments_text(text, file)
    if variant is None and len(exps) == 1:
        return exps[0]
    ids = [e.variant for e in exps]
    if variant in ids:
        return exps[ids.index(variant)]
    what = "has no matrix" if ids == [""] else f"has {len(ids)} variants: {', '.join(ids)}"
    hint = "pick one with --variant ID" if variant is None else "variant ids are as listed"
    raise ValidationError([Problem(file, None, None, "matrix", f"the experiment {what}", variant, hint)])


def load_experiments_text(text: str, file: str = "<string>") -> tuple[Experiment, ...]:
    doc = parse_located(text, file)
    f = Fields(doc)
    if doc.value is None and doc.problems:
        raise ValidationError(_sorted(f.problems))
    top = f.mapping((), doc.value, (*TOP_KEYS, "matrix"), "an experiment")
    if top is None:
        raise ValidationError(_sorted(f.problems))
    axes = read_axes(f, top.get("matrix"))
    if axes is None:
        return (_validated(f, top, file, None),)
    work = len(variants(axes)) * doc.nodes if axes else 0
    if work > MAX_MATRIX_NODES:
        f.error(("matrix",), f"{len(variants(axes))} variants of a {doc.nodes}-node document are {work} nodes to "
                f"validate; at most {MAX_MATRIX_NODES} are allowed", None, "fewer variants, or a smaller file")
    if f.problems or not axes:
        raise ValidationError(_sorted(f.problems))
    found: list[Experiment] = []
    per_variant: list[tuple[str, list[Problem]]] = []
    for v in variants(axes):
        vf = Fields(doc)
        vdoc, vtop = apply_variant(doc, top, v, vf)
        vf.doc = vdoc
        try:
            found.append(_validated(vf, vtop, file, v))
        except ValidationError as exc:
            per_variant.append((v.id, list(exc.problems)))
    if per_variant:
        raise ValidationError(_merge(per_variant, len(found) + len(per_variant)))
    return tuple(found)


def _validated(f: Fields, top: dict[str, Any], file: str, choice: Variant | None) -> Experiment:
    exp = _build(f, top, file, choice)
    variant = choice.id if choice is not None else ""
    if exp is not None:
        exp = dataclasses.replace(exp, variant=variant)
        check_rules(f, exp)
        check_release(f, exp)
        check_upgrades(f, exp)
        check_migration(f, exp)
        if len(exp.name) + len(variant) > MAX_RUN_NAME_CHARS:
            f.error(("matrix",), f"the variant id makes the run directory's name longer than {MAX_RUN_NAME_CHARS} "
                    "characters (name and variant id)", variant, "a matrix value is part of the id: shorten it")
    if f.problems or exp is None:
        raise ValidationError(_sorted(f.problems))
    return exp


def _merge(per_variant: list[tuple[str, list[Problem]]], total: int) -> list[Problem]:
    """Problems every variant has are reported once; others name the variants that have them."""
    seen: dict[str, tuple[Problem, list[str]]] = {}
    for vid, problems in per_variant:
        for p in problems:
            seen.setdefault(repr(p), (p, []))[1].append(vid)
    out = [p if len(vids) == total else dataclasses.replace(p, message=f"{p.message} [{_which(vids, total)}]")
           for p, vids in seen.values()]
    return _sorted(out)


def _which(vids: list[str], total: int) -> str:
    if len(vids) <= 2:
        return "variant " + " and ".join(vids)
    return f"{len(vids)} of {total} variants, e.g. {vids[0]}"


def _sorted(problems: list[Problem]) -> list[Problem]:
    """In file order; past `MAX_PROBLEMS`, one last problem counts the rest."""
    out = sorted(problems, key=lambda p: (p.line or 0, p.column or 0))
    if len(out) > MAX_PROBLEMS:
        rest = len(out) - MAX_PROBLEMS
        out = [*out[:MAX_PROBLEMS], Problem(out[0].file, out[MAX_PROBLEMS].line, None, "",
                                            f"... and {rest} more problem(s)")]
    return out


def _build(f: Fields, top: dict[str, Any], file: str, variant: Variant | None) -> Experiment | None:
    name = f.string(top, (), "name")
    if name is not MISSING and not _NAME.match(name):
        f.error(("name",), "must be letters, digits, '.', '_' or '-' (it names the run directory)", name)
        name = MISSING
    duration = f.duration(top, (), "duration")
    seed = f.integer(top, (), "seed", default=1, minimum=0, maximum=MAX_SEED, why="a seed fits a 64-bit long")
    description = f.string(top, (), "description", default="")
    cluster = read_cluster(f, top.get("cluster"))
    topics = _topics(f, top.get("topics"))
    workload = read_workload(f, top.get("workload"))
    steady = f.strings(top, (), "steady_state", default=default_steady_state(workload), choices=PROBES.keys())
    steady_timeout = f.duration(top, (), "steady_timeout", default=60.0)
    drain = f.duration(top, (), "drain", default=10.0, positive=False)
    schedule, operations = read_schedule(f, top.get("schedule"))
    verify = _verify(f, top.get("verify"))
    expect = read_expect(f, top.get("expect"), variant)
    if verify is not None and expect is not None:
        verify = dataclasses.replace(verify, expect=expect)
    explore = read_explore(f, top.get("explore"), cluster.mode if cluster is not None else "zookeeper")
    values = (name, duration, seed, description, cluster, topics, workload, steady, steady_timeout, drain,
              schedule, verify, expect, explore)
    if any(v is MISSING or v is None for v in values):
        return None
    assert cluster is not None and topics is not None and workload is not None and verify is not None
    assert explore is not None
    return Experiment(name=name, duration=duration, description=description, seed=seed, cluster=cluster,
                      topics=topics, workload=workload, steady_state=steady, steady_timeout=steady_timeout,
                      schedule=schedule, operations=operations, drain=drain, verify=verify, explore=explore,
                      source=file)


def _topics(f: Fields, raw: object) -> tuple[TopicSpec, ...] | None:
    out: list[TopicSpec] = []
    seen: dict[str, int] = {}
    items = f.sequence(("topics",), raw, "topics")
    count_items(f, ("topics",), items, MAX_TOPICS, "topics")
    for i, item in enumerate(items):
        path: Path = ("topics", i)
        m = f.mapping(path, item, ("name", "partitions", "replication_factor", "config"), "a topic")
        if m is None:
            continue
        name = f.string(m, path, "name")
        partitions = f.integer(m, path, "partitions", default=1, minimum=1, maximum=MAX_PARTITIONS,
                               why="the observers poll, and the verifiers judge, every partition")
        rf = f.integer(m, path, "replication_factor", default=1, minimum=1)
        config = f.properties(m, path, "config")
        for key, value in config.items():
            problem = config_problem({key: value})
            if problem:
                f.error((*path, "config", key), f"Apache Kafka refuses this topic config ({problem})", value)
        if name is not MISSING and not _NAME.match(name):
            f.error((*path, "name"), "a topic name is letters, digits, '.', '_' or '-'", name)
            continue
        if name in _KAFKA_INTERNAL_TOPICS:
            f.error((*path, "name"), "Kafka reserves this topic name", name)
            continue
        if name in seen:
            f.error((*path, "name"), f"topic declared twice (first at topics[{seen[name]}])", name)
            continue
        if MISSING not in (name, partitions, rf):
            seen[name] = i
            out.append(TopicSpec(name, partitions, rf, frozen_map(config)))  # type: ignore[arg-type]
    return tuple(out)


def _verify(f: Fields, raw: object) -> VerifySpec | None:
    path: Path = ("verify",)
    m = f.mapping(path, raw, ("checks", "allow", "slo"), "verify")
    if m is None:
        return None
    short = {c.split(".", 1)[1] for c in CHECK_IDS}
    checks = f.strings(m, path, "checks", default=["all"], choices=("all", *CHECK_FAMILIES, *CHECK_IDS))
    allow = f.strings(m, path, "allow", default=[], choices=(*CHECK_IDS, *short, *CHECK_FAMILIES))
    slo_path: Path = (*path, "slo")
    s = f.mapping(slo_path, m.get("slo"), ("controller_failover", "partition_unavailable", "rebalance",
                                           "write_unavailable", "read_unavailable"), "slo")
    if s is None or MISSING in (checks, allow):
        return None
    d = SloSpec()
    slo = SloSpec(
        controller_failover=f.duration(s, slo_path, "controller_failover", default=d.controller_failover),
        partition_unavailable=f.duration(s, slo_path, "partition_unavailable", default=d.partition_unavailable),
        rebalance=f.duration(s, slo_path, "rebalance", default=d.rebalance),
        # Optional: None (absent or null) means not declared, and the check reports without judging.
        write_unavailable=f.duration(s, slo_path, "write_unavailable", default=None),
        read_unavailable=f.duration(s, slo_path, "read_unavailable", default=None),
    )
    if MISSING in (slo.controller_failover, slo.partition_unavailable, slo.rebalance, slo.write_unavailable,
                   slo.read_unavailable):
        return None
    return VerifySpec(checks=checks, allow=allow, slo=slo)


__all__ = ["did_you_mean", "load_experiment", "load_experiment_text", "load_experiments", "load_experiments_text"]
