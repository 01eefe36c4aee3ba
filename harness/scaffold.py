"""`kafka-chaos init [DIR]`: a starter project, the shortest path from `pip install kafka-chaos` to a first nightly.

Owns the files `init()` writes into DIR and their text (string constants here: the package ships no data files
besides its own): a starter experiment (`experiments/first-experiment.yaml`, about 30 s of chaos, whose first line
names the schema written beside it, `experiment.schema.json`, so editors complete and check it offline), a
`pytest.ini` with which a bare `pytest` runs every experiment under `experiments/` through the plugin (the `pytest11`
entry point: no conftest.py), a Makefile fragment (`kafka-chaos.mk`: `chaos`, `chaos-nightly`), a GitHub Actions
nightly (`.github/workflows/kafka-chaos-nightly.yml`, docs/ci/github-actions.yml adapted to a project without the
kafka-chaos Makefile) and `KAFKA-CHAOS.md`, the paragraph that says what each is and what to run.

All or nothing: before anything is written, every file that exists already, and a pytest configuration elsewhere
in DIR that `pytest.ini` would silently shadow (pytest reads the first configuration it finds, and pytest.ini
first), is named in one `ConfigError`; `force=True` overwrites them.
"""

from __future__ import annotations

import configparser
from pathlib import Path

from harness.errors import ConfigError

EXPERIMENT = Path("experiments/first-experiment.yaml")
SCHEMA = Path("experiment.schema.json")
PYTEST_INI = Path("pytest.ini")
MAKEFILE = Path("kafka-chaos.mk")
WORKFLOW = Path(".github/workflows/kafka-chaos-nightly.yml")
README = Path("KAFKA-CHAOS.md")
FILES = (EXPERIMENT, SCHEMA, PYTEST_INI, MAKEFILE, WORKFLOW, README)
"""What `init` writes, relative to DIR, in this order."""
NEXT_STEP = "pytest"
"""The command that runs the starter experiment in DIR."""

FIRST_EXPERIMENT = """\
# yaml-language-server: $schema=../experiment.schema.json
# Your first kafka-chaos experiment (written by `kafka-chaos init`; KAFKA-CHAOS.md says how to run it).
# The first line lets editors complete and check this file (experiment.schema.json; `kafka-chaos schema` prints it);
# `kafka-chaos validate experiments/*.yaml` checks what only the loader can (targets, topics, overlapping faults).
#
# The story: three brokers take acks=all writes from an idempotent producer while a consumer group reads them.
# The controller is killed for 12 s. ZooKeeper notices after one session timeout (6 s here), a surviving broker
# becomes controller with a higher epoch, partitions led by the dead broker get new leaders from their in-sync
# replicas, and the group rebalances. Expect: one controller per epoch, failover within the SLO, no acknowledged
# write lost or duplicated, every acknowledged record consumed. Copy this file to start another experiment.
name: first-experiment
description: Kill the controller under acks=all load; expect a new controller within the SLO, no acked write lost.
seed: 1                      # faults, random targets and keys are drawn from it: a run repeats with its seed
cluster:
  brokers: 3                 # Apache Kafka 3.9 in ZooKeeper mode (`mode: kraft` runs the newest 4.x on a quorum)
  zookeepers: 1
  broker_config:             # server.properties of every broker
    min.insync.replicas: 2                  # an acks=all write needs 2 of its 3 replicas
    unclean.leader.election.enable: false   # never elect a replica that may lack acknowledged writes
    zookeeper.session.timeout.ms: 6000      # how soon ZooKeeper declares a killed broker dead
    replica.lag.time.max.ms: 10000
    group.initial.rebalance.delay.ms: 0
    offsets.topic.num.partitions: 10
topics:
  - {name: orders, partitions: 3, replication_factor: 3}
workload:
  producers:
    # 100 records/s over 20 keys; acks=all and idempotence: no acknowledged write may be lost or written twice.
    - {topic: orders, rate: 100, acks: all, idempotence: true, keys: 20}
  consumers:
    # Two members; offsets committed synchronously (with auto-commit librdkafka may retry an older commit after a
    # newer one while the coordinator fails over, and the committed offset really goes back).
    - {group: billing, topics: [orders], members: 2, commit: sync}
# The chaos phase starts once these hold (at most steady_timeout): a controller, a leader for every partition,
# the group Stable.
steady_state: [controller_present, all_partitions_led, group_stable]
steady_timeout: 60s
schedule:                    # `at` counts from the start of the chaos phase; `kafka-chaos faults` lists every kind
  - {at: 8s, fault: kill, target: controller, duration: 12s}   # SIGKILL, restarted when the 12 s are over
duration: 30s                # the chaos phase; then every fault is healed and the workload drains
drain: 15s
verify:
  checks: [all]              # every check that applies; `allow: [duplicate]` would tolerate one by name
  slo: {controller_failover: 15s, partition_unavailable: 20s, rebalance: 30s}
"""

PYTEST_INI_TEXT = """\
# Written by `kafka-chaos init` (KAFKA-CHAOS.md). `pytest` runs every experiment under experiments/ as a test: the
# kafka-chaos plugin loads itself (the pytest11 entry point of the kafka-chaos package), no conftest.py needed.
# Options: --chaos-backend auto|containers|process, --chaos-seed 1,2,3, --chaos-runs-dir DIR.
[pytest]
testpaths = experiments
chaos_experiments =
    experiments/*.yaml
    experiments/*.yml
addopts = -ra --chaos-runs-dir=runs
# kafka-python (which kafka-chaos uses for Kafka's wire protocol) loads its schemas with a deprecated API.
filterwarnings =
    ignore:read_text is deprecated:DeprecationWarning
    ignore:open_text is deprecated:DeprecationWarning
"""

MAKEFILE_TEXT = """\
# kafka-chaos targets (written by `kafka-chaos init`; KAFKA-CHAOS.md). Put `include kafka-chaos.mk` in your
# Makefile below its default target (make's default goal is the first target it reads), or run
# `make -f kafka-chaos.mk chaos`. Every variable can be set on the command line:
#   make -f kafka-chaos.mk chaos CHAOS_BACKEND=process
#   make -f kafka-chaos.mk chaos-nightly CHAOS_SEEDS="1 2 3 4 5"
CHAOS_PYTHON ?= python3
CHAOS_EXPERIMENTS ?= experiments/
CHAOS_BACKEND ?= auto
CHAOS_RUNS_DIR ?= runs
CHAOS_PYTEST_ARGS ?=
CHAOS_SEEDS ?= 1 2 3
CHAOS_NIGHTLY_OUT ?= runs/nightly
CHAOS_NIGHTLY_ARGS ?=

.PHONY: chaos chaos-nightly chaos-trend

# Every experiment once (its own seed): one pytest session, run directories with their reports in CHAOS_RUNS_DIR.
chaos:
\t$(CHAOS_PYTHON) -m pytest $(CHAOS_EXPERIMENTS) --chaos-backend $(CHAOS_BACKEND) \\
\t\t--chaos-runs-dir $(CHAOS_RUNS_DIR) $(CHAOS_PYTEST_ARGS)

# Every experiment with every seed into CHAOS_NIGHTLY_OUT/<UTC date>/ (one JUnit file for the night), then the trend
# page across nights, CHAOS_NIGHTLY_OUT/trend.html. Exits 0 when every run passed, 1 when one failed, 2 when the
# suite could not run. --no-long-tests: the kafka-chaos project's own long tests are not this project's.
chaos-nightly:
\t$(CHAOS_PYTHON) -m harness.nightly $(CHAOS_EXPERIMENTS) --seeds $(CHAOS_SEEDS) --backend $(CHAOS_BACKEND) \\
\t\t--out $(CHAOS_NIGHTLY_OUT) --no-long-tests $(CHAOS_NIGHTLY_ARGS)

# Rebuild the trend page only.
chaos-trend:
\t$(CHAOS_PYTHON) -m harness.cli report --trend $(CHAOS_NIGHTLY_OUT)
"""

WORKFLOW_TEXT = """\
# The kafka-chaos nightly of this project (written by `kafka-chaos init`; KAFKA-CHAOS.md): every experiment under
# experiments/ with five seeds (make -f kafka-chaos.mk chaos-nightly), the runs' reports and histories and the trend
# page kept as an artefact for 30 days, the night's JUnit XML published. The process backend runs Apache Kafka
# (installed from the Apache release into ~/.cache/kafka-chaos on first use) and ZooKeeper as processes on the
# runner; CHAOS_BACKEND=containers runs them in Docker instead. The disk, power-loss, clock and packet faults need
# more (root, FUSE, libfaketime): see the kafka-chaos docs (nightly-ci.md) before adding experiments that use them.
name: kafka-chaos-nightly
on:
  schedule: [{cron: "17 2 * * *"}]
  workflow_dispatch: {}
jobs:
  chaos:
    runs-on: ubuntu-latest
    timeout-minutes: 120
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with: {python-version: "3.11"}
      - uses: actions/setup-java@v4
        with: {distribution: temurin, java-version: "17"}
      - name: Install kafka-chaos and pytest
        run: python -m pip install kafka-chaos pytest
      - name: Earlier nights (for the trend page)
        uses: actions/cache/restore@v4
        with:
          path: runs/nightly
          key: kafka-chaos-nightly-${{ github.run_id }}
          restore-keys: kafka-chaos-nightly-
      - name: Prune nights older than 30 days
        run: find runs/nightly -mindepth 1 -maxdepth 1 -type d -mtime +30 -exec rm -rf {} + || true
      - name: Run every experiment with five seeds
        run: make -f kafka-chaos.mk chaos-nightly CHAOS_BACKEND=process CHAOS_SEEDS="1 2 3 4 5"
      - name: Keep the nights for tomorrow's trend
        if: always()
        uses: actions/cache/save@v4
        with:
          path: runs/nightly
          key: kafka-chaos-nightly-${{ github.run_id }}
      - name: Reports, histories and the trend page
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: kafka-chaos-nightly-${{ github.run_number }}
          path: runs/nightly
          retention-days: 30
      - name: Test results
        if: always()
        uses: mikepenz/action-junit-report@v4
        with:
          report_paths: runs/nightly/*/junit-seed-*.xml
          include_passed: true
"""

README_TEXT = """\
# Chaos experiments (kafka-chaos)

`kafka-chaos init` set this project up to run chaos experiments against a real Apache Kafka cluster: each file under
`experiments/` names a cluster, topics, a workload, a fault schedule and what to verify; the harness brings the
cluster up, injects the faults, records what it observes and has Spark verifiers judge the run. It wrote:

- `experiments/first-experiment.yaml`: the starter (three brokers, acks=all load, the controller killed for 12 s).
- `experiment.schema.json`: the experiment files' JSON Schema, named on each file's first line, so editors
  (VS Code's YAML extension, JetBrains IDEs) complete and check them; `kafka-chaos schema > experiment.schema.json`
  refreshes it after upgrading kafka-chaos.
- `pytest.ini`: `pytest` runs every experiment as a test (the kafka-chaos plugin loads itself; no conftest.py).
- `kafka-chaos.mk`: `make -f kafka-chaos.mk chaos` (every experiment once) and `chaos-nightly` (every experiment with
  several seeds, then the trend page); or `include kafka-chaos.mk` in your Makefile.
- `.github/workflows/kafka-chaos-nightly.yml`: that nightly on GitHub Actions, every night at 02:17 UTC.

Run it (Python 3.11+ and Java 17+; `pip install kafka-chaos pytest`):

```sh
pytest                                  # every experiment; --chaos-backend process|containers, --chaos-seed 1,2,3
make -f kafka-chaos.mk chaos            # the same through make
make -f kafka-chaos.mk chaos-nightly    # seeds 1 2 3 into runs/nightly/<date>/, then runs/nightly/trend.html
kafka-chaos run experiments/first-experiment.yaml    # one experiment with live progress
```

The first run installs Apache Kafka into `~/.cache/kafka-chaos/` (the process backend, used where no Docker engine
answers). Each run gets a directory under `runs/` with `verdict.json`, `report.html` (every check, its evidence, the
plots) and `junit.xml`; a failing test prints the failed checks, the report's path and the command that reproduces
the run exactly. Add `runs/` to `.gitignore`.

To add an experiment, copy `experiments/first-experiment.yaml` under a new name and edit it: `kafka-chaos faults`
lists every fault kind and operation and what it takes, `kafka-chaos validate experiments/*.yaml` checks the files
without running anything, and `pytest experiments/NAME.yaml` runs one. The kafka-chaos README (its "A short tour")
and docs (design.md: the experiment format, the checks, the history; nightly-ci.md: the nightly and its trend page;
editors.md) explain the rest.
"""


def templates() -> dict[Path, str]:
    """Every file `init` writes (relative to DIR) and its text; the schema is generated from the loader here."""
    from harness.experiment.json_schema import schema_text

    return {EXPERIMENT: FIRST_EXPERIMENT, SCHEMA: schema_text(), PYTEST_INI: PYTEST_INI_TEXT,
            MAKEFILE: MAKEFILE_TEXT, WORKFLOW: WORKFLOW_TEXT, README: README_TEXT}


def shadowed_pytest_config(directory: Path) -> str | None:
    """The pytest configuration in `directory` that a new pytest.ini would take the place of (pytest reads
    pytest.ini before pyproject.toml, tox.ini and setup.cfg), as `file [section]`; None when there is none."""
    pyproject = directory / "pyproject.toml"
    if pyproject.is_file():
        import tomllib

        try:
            doc = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError):
            doc = {}
        if "ini_options" in doc.get("tool", {}).get("pytest", {}):
            return "pyproject.toml [tool.pytest.ini_options]"
    for name, section in (("tox.ini", "pytest"), ("setup.cfg", "tool:pytest")):
        path = directory / name
        if path.is_file():
            parser = configparser.ConfigParser(interpolation=None, strict=False)
            try:
                parser.read(path, encoding="utf-8")
            except (configparser.Error, UnicodeDecodeError):
                continue
            if parser.has_section(section):
                return f"{name} [{section}]"
    return None


def init(directory: Path, *, force: bool = False) -> list[Path]:
    """Write the starter project into `directory` (created if missing) and return the paths written, in `FILES`
    order. Refuses, writing nothing, with a `ConfigError` naming every file in the way (and a pytest configuration
    that pytest.ini would shadow), unless `force`; a directory where a file goes is refused even then."""
    directory = Path(directory)
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{directory} is not a directory")
    blocked = [directory / rel for rel in FILES if (directory / rel).exists() and not (directory / rel).is_file()]
    if blocked:
        raise ConfigError("cannot write the kafka-chaos starter files: not a regular file: "
                          + ", ".join(map(str, blocked)))
    if not force:
        existing = [str(directory / rel) for rel in FILES if (directory / rel).exists()]
        shadowed = None if (directory / PYTEST_INI).exists() else shadowed_pytest_config(directory)
        problems = []
        if existing:
            problems.append(f"{len(existing)} file(s) exist already: {', '.join(existing)}")
        if shadowed:
            problems.append(f"{directory / shadowed} configures pytest, and a pytest.ini would take its place "
                            "(add `chaos_experiments = experiments/*.yaml` there instead)")
        if problems:
            raise ConfigError("kafka-chaos init wrote nothing: " + "; ".join(problems)
                              + "; --force overwrites them")
    written: list[Path] = []
    for rel, text in templates().items():
        path = directory / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


__all__ = ["FILES", "NEXT_STEP", "init", "shadowed_pytest_config", "templates"]
