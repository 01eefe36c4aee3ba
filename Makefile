# kafka-chaos: `make demo` runs an experiment end to end; `make test` runs the whole suite;
# `make nightly` runs every experiment with several seeds and builds the trend page.
# Both set up what they need on a fresh machine: Java and Maven (apt) for ZooKeeper, Spark and Kafka,
# .venv, and Apache Kafka in the per-user cache (~/.cache/kafka-chaos, from Maven Central).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO ?= experiments/controller-failover.yaml
BACKEND ?= auto
# Apache Kafka lines installed into the cache: 3.9 (ZooKeeper mode, the default) and 4 (the newest 4.x, KRaft).
KAFKA ?= 3.9 4
PYTEST_ARGS ?=
# Test files run on 3 workers (a file stays on one worker, so module fixtures start once); 0 = serial. Three on
# the 2 cores: most of an end-to-end test's time is its experiment's schedule, which waits. Measured 2026-11-24,
# the whole suite: 20 min 12 s with 3 workers, 24-27 min with 2.
PYTEST_WORKERS ?= 3
NIGHTLY_SEEDS ?= 1 2 3
NIGHTLY_EXPERIMENTS ?= experiments/
NIGHTLY_OUT ?= runs/nightly
NIGHTLY_ARGS ?=
KNOWN_BUGS_SEEDS ?= 1 2 3
KNOWN_BUGS_OUT ?= runs/known-bugs
KNOWN_BUGS_ARGS ?=
EXPLORE_EXPERIMENTS ?= $(wildcard experiments/*.yaml)
EXPLORE_BUDGET ?= 10m
EXPLORE_OUT ?= runs/explore

.PHONY: demo test nightly known-bugs explore actionlint lint unit integration java faketime fuse chromium kafka toxiproxy spark-archive venv podman clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kafka-chaos needs Python >= 3.11")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing kafka-chaos and its dependencies into $(VENV) (pip's output: $(VENV)/pip-install.log)"
	@{ $(PY) -m pip install --quiet --upgrade pip && $(PY) -m pip install --quiet -e '.[dev]'; } \
	  > $(VENV)/pip-install.log 2>&1 || { cat $(VENV)/pip-install.log; exit 1; }
	touch $(STAMP)

java:
	@command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1 || { \
	  echo "java or mvn not found: installing a headless JRE and Maven (ZooKeeper, Spark, Apache Kafka)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq default-jre-headless maven; }

# libfaketime (Debian), which the clock_skew fault loads into the nodes. Best effort: without it clock_skew says
# what to install, and its test fails saying so.
faketime:
	-@ls /usr/lib/*/faketime/libfaketimeMT.so.1 >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get install -y -qq libfaketime >/dev/null 2>&1 \
	  || { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq libfaketime >/dev/null; } \
	  || echo "libfaketime could not be installed: clock_skew needs it"; }

# fuse3 and libfuse3 (Debian), which the power-loss filesystem (harness/cluster/lazyfs_daemon.py, mfusepy) mounts
# with. Best effort: without them a power_loss run fails at start saying what is missing, and so does its test.
fuse:
	-@ls /usr/lib/*/libfuse3.so.3 >/dev/null 2>&1 && command -v fusermount3 >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get install -y -qq fuse3 >/dev/null 2>&1 \
	  || { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq fuse3 >/dev/null; } \
	  || echo "fuse3 could not be installed: power_loss needs it"; }

# Debian's chromium, in which tests/integration/report/test_reports_in_chromium.py opens report.html, the compare
# page and the trend page headless. Best effort like the others, but that test fails (not skips) saying what is
# missing when /usr/bin/chromium is absent; KAFKA_CHAOS_NO_BROWSER=1 skips it on purpose.
chromium:
	-@test -x /usr/bin/chromium || { \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get install -y -qq chromium >/dev/null 2>&1 \
	  || { $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq chromium >/dev/null; } \
	  || echo "chromium could not be installed: the report pages' browser test needs it"; }

# Apache Kafka $(KAFKA) into the cache (KAFKA_HOME, the Apache tarball or Maven Central; cached after the
# first time). Best effort: where no source works the reason is printed, and the Apache Kafka tests skip
# with it (the demo then fails naming every source tried).
kafka: venv java
	-@for v in $(KAFKA); do $(VENV)/bin/kafka-chaos kafka install $$v; done

# The real Toxiproxy server (Shopify's, `go install`) into the cache, for the tests that compare the
# embedded server with it and one end-to-end run. Best effort: without Go those tests skip and say why.
toxiproxy: venv
	-$(VENV)/bin/kafka-chaos toxiproxy install

# rhysd/actionlint, which checks docs/ci/github-actions.yml in the suite (about 20 s to build once). Best effort:
# without Go the test says it was skipped and why.
ACTIONLINT_VERSION ?= v1.7.12
actionlint:
	-command -v actionlint >/dev/null || test -x "$$(go env GOPATH 2>/dev/null)/bin/actionlint" || \
		GOFLAGS=-mod=mod go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

# The Spark driver JVM's class-data-sharing archive into the cache (spark_analysis/session/jvm_archive.py): a cold
# verify starts about 4 s sooner. Built once per Java runtime and pyspark (about 35 s). Best effort: without
# it the verifiers start as before.
spark-archive: venv java
	-$(PY) -m spark_analysis.jvm_archive_build

demo: venv java kafka spark-archive
	$(VENV)/bin/kafka-chaos run $(DEMO) --backend $(BACKEND)

# Every experiment x NIGHTLY_SEEDS into $(NIGHTLY_OUT)/<date>/, then $(NIGHTLY_OUT)/trend.html (docs/nightly-ci.md).
nightly: venv java faketime fuse spark-archive
	$(PY) -m harness.nightly $(NIGHTLY_EXPERIMENTS) --seeds $(NIGHTLY_SEEDS) --backend $(BACKEND) --out $(NIGHTLY_OUT) $(NIGHTLY_ARGS)

# Explore each experiment for EXPLORE_BUDGET (a matrix on its first variant) into $(EXPLORE_OUT)/<name>/
# (explore.json, explore.html, minimal.yaml when a failure was found), listed in $(EXPLORE_OUT)/explore-suite.json.
explore: venv java faketime fuse spark-archive
	$(PY) -m harness.explore.suite $(EXPLORE_EXPERIMENTS) --budget $(EXPLORE_BUDGET) --backend $(BACKEND) --out $(EXPLORE_OUT)

# The known-bugs corpus: every experiments/known-bugs/ file (a real Kafka bug) on its affected and its fixed
# release with KNOWN_BUGS_SEEDS, into $(KNOWN_BUGS_OUT)/<stamp>/, then known-bugs.html / known-bugs.json there
# and in $(KNOWN_BUGS_OUT)/ (docs/known-bugs.md).
known-bugs: venv java spark-archive
	$(PY) -m harness.known_bugs --seeds $(KNOWN_BUGS_SEEDS) --backend $(BACKEND) --out $(KNOWN_BUGS_OUT) $(KNOWN_BUGS_ARGS)

# A Docker API for tests/containers where no Docker engine runs: Podman with locally built images.
# Best effort: where Podman cannot be installed or started, tests/containers skip and say why.
podman:
	-@compose/podman/setup.sh >/dev/null || echo "podman setup failed: tests/containers will skip"

lint: venv
	$(VENV)/bin/ruff check harness spark_analysis tests benchmarks
	$(VENV)/bin/mypy

# The suite on PYTEST_WORKERS workers, then the tests marked `serial` alone (a migration's and an upgrade's JVMs would
# slow the tests beside them past their timeouts). A --junitxml in PYTEST_ARGS is written by both runs: the second one's is kept.
test: venv java kafka toxiproxy faketime fuse chromium spark-archive lint podman actionlint
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=15 -m "not serial" $(PYTEST_ARGS)
	$(PY) -m pytest -m serial $(PYTEST_ARGS)

unit: venv
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

integration: venv java kafka spark-archive
	$(PY) -m pytest tests/integration $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache runs
