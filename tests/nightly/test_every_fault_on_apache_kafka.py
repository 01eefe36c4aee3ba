"""Every broker fault kind and every Toxiproxy toxic, one after the other (tests/data/apache_kafka/
every-fault.yaml), on Apache Kafka 3.9 through the process backend, with the real Toxiproxy server
(Shopify's, installed with `go install`) carrying every link: every check passes, every fault was
injected and healed, and the run ran on what it says it ran on.
Nightly since stop 53: make test on 2 cores ran over its 25 minutes (26.8 min for the parallel part in a fresh
clone, 31 min on CI), and this was among its heaviest tests (273-399 s). make test keeps the real Toxiproxy's own
tests (tests/integration/toxiproxy/) and the process backend's fault tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.cli import main
from tests.fixtures.process_cluster import apache_kafka
from tests.integration.e2e.support import ROOT, events, failing_checks, run_info

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.slow,
              pytest.mark.timeout(600)]  # 115 s alone; 184-220 s in make test's suite, 300+ s beside a migration
EXPERIMENT = ROOT / "tests" / "data" / "apache_kafka" / "every-fault.yaml"


def test_every_fault_kind_on_apache_kafka_through_the_real_toxiproxy(
    tmp_path: Path, real_toxiproxy_bin: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    apache_kafka()
    monkeypatch.setenv("TOXIPROXY_BIN", str(real_toxiproxy_bin))
    code = main(["run", str(EXPERIMENT), "--backend", "process", "--broker", "apache-kafka",
                 "--runs-dir", str(tmp_path)])
    (run_dir,) = list(tmp_path.iterdir())
    info = run_info(run_dir)
    assert info["broker"]["flavour"] == "apache-kafka"
    assert info["cluster_info"]["toxiproxy"]["binary"] == str(real_toxiproxy_bin), info["cluster_info"]["toxiproxy"]
    evs = events(run_dir)
    started = {e["fault_id"]: e["kind"] for e in evs if e["type"] == "fault.start"}
    ended = {e["fault_id"] for e in evs if e["type"] == "fault.end"}
    assert sorted(set(started.values())) == sorted(["pause", "isolate", "cut", "latency", "bandwidth", "slicer",
                                                    "reset_peer", "timeout", "limit_data"])
    assert set(started) == ended, "a fault was not healed"
    effects = {e["kind"]: e["effect"] for e in evs if e["type"] == "fault.start"}
    assert effects["pause"]["down"] and effects["pause"]["nodes"] == [{"role": "broker", "id": 3}]
    assert effects["isolate"]["unreachable"] == [{"role": "broker", "id": 2, "from": ["broker", "client", "zookeeper"]}]
    assert [x["proxy"] for x in effects["cut"]["links"]] == ["client->1"]
    for toxic in ("latency", "bandwidth", "slicer", "reset_peer", "timeout", "limit_data"):
        assert [t["type"] for t in effects[toxic]["toxics"]] == [toxic], effects[toxic]
    assert not failing_checks(run_dir), failing_checks(run_dir)
    assert code == 0
