# kafka-chaos: `make demo` runs an experiment end to end; `make test` runs the whole suite;
# `make nightly` runs every experiment with several seeds and builds the trend page.
# Both set up what they need on a fresh machine: Java (apt) for ZooKeeper and Spark, and .venv.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
DEMO ?= experiments/controller-failover.yaml
BACKEND ?= auto
PYTEST_ARGS ?=
# Test files run on 2 workers (a file stays on one worker, so module fixtures start once); 0 = serial.
PYTEST_WORKERS ?= 2
NIGHTLY_SEEDS ?= 1 2 3
NIGHTLY_EXPERIMENTS ?= experiments/
NIGHTLY_OUT ?= runs/nightly
NIGHTLY_ARGS ?=

.PHONY: demo test nightly lint unit integration java venv podman clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "kafka-chaos needs Python >= 3.11")'
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

java:
	@command -v java >/dev/null 2>&1 || { \
	  echo "java not found: installing a headless JRE (needed by ZooKeeper and Spark)"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq default-jre-headless; }

demo: venv java
	$(VENV)/bin/kafka-chaos run $(DEMO) --backend $(BACKEND)

# Every experiment x NIGHTLY_SEEDS into $(NIGHTLY_OUT)/<date>/, then $(NIGHTLY_OUT)/trend.html (docs/nightly-ci.md).
nightly: venv java
	$(PY) -m harness.nightly $(NIGHTLY_EXPERIMENTS) --seeds $(NIGHTLY_SEEDS) --backend $(BACKEND) --out $(NIGHTLY_OUT) $(NIGHTLY_ARGS)

# A Docker API for tests/containers where no Docker engine runs: Podman with locally built images.
# Best effort: where Podman cannot be installed or started, tests/containers skip and say why.
podman:
	-@compose/podman/setup.sh >/dev/null || echo "podman setup failed: tests/containers will skip"

lint: venv
	$(VENV)/bin/ruff check harness spark_analysis tests benchmarks
	$(VENV)/bin/mypy

test: venv java lint podman
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

unit: venv
	$(PY) -m pytest tests/unit $(PYTEST_ARGS)

integration: venv java
	$(PY) -m pytest tests/integration $(PYTEST_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache runs
