"""`harness.explore.reuse.ReusedCluster` with a stand-in backend (no Kafka: a fake whose clusters only count their
ups and downs) and a stand-in clean-up: one cluster serves run after run, a run that did not complete or a clean-up
that failed retires it, the next lend brings a fresh one up and says why, and `close` takes the last one down. The
clean-up itself (Admin API deletes on Apache Kafka) runs in explore's nightly proof."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

import harness.explore.reuse as reuse
from harness.cluster.base import ClusterSpec
from harness.experiment import load_experiment_text
from harness.explore.reuse import ReusedCluster

EXP = load_experiment_text("name: e\nduration: 30s\ntopics: [{name: t}]\n", "e.yaml")


@dataclass
class FakeCluster:
    bootstrap_servers: str
    downs: list[str] = field(default_factory=list)

    def down(self) -> None:
        self.downs.append(self.bootstrap_servers)


@dataclass
class FakeBackend:
    name: str = "process"
    ups: list[FakeCluster] = field(default_factory=list)

    def available(self) -> tuple[bool, str]:
        return True, "fake"

    def up(self, spec: ClusterSpec, workdir: Path) -> FakeCluster:
        self.ups.append(FakeCluster(f"fake:{len(self.ups)}"))
        return self.ups[-1]


def test_one_cluster_serves_runs_until_one_leaves_it_unhealthy_then_a_fresh_one_is_brought_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    cleaned: list[str] = []
    monkeypatch.setattr(reuse, "clean", lambda servers, exp, **_: cleaned.append(servers))
    backend = FakeBackend()
    with ReusedCluster(backend, "fake", ClusterSpec(), tmp_path) as clusters:  # type: ignore[arg-type]
        lent, reason = clusters.lend()
        assert "kafka-chaos explore" in reason and lent.name == "process"
        clusters.after(EXP, "completed")
        clusters.lend()
        clusters.after(EXP, "completed")
        assert len(backend.ups) == 1 and cleaned == ["fake:0", "fake:0"]
        clusters.lend()
        clusters.after(EXP, "aborted")  # steady state never reached: the cluster goes
        assert backend.ups[0].downs == ["fake:0"]
        clusters.lend()
        assert len(backend.ups) == 2 and clusters.clusters == 2
        assert clusters.fresh == ["the run before ended aborted"]
    assert backend.ups[1].downs == ["fake:1"]  # closed on leaving the block


def test_a_failed_clean_up_retires_the_cluster_rather_than_lending_it_dirty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuses(servers: str, exp: object, **_: object) -> None:
        raise TimeoutError("awaited the deletion of ['t'] for 60s; they are still listed")

    monkeypatch.setattr(reuse, "clean", refuses)
    backend = FakeBackend()
    with ReusedCluster(backend, "fake", ClusterSpec(), tmp_path) as clusters:  # type: ignore[arg-type]
        clusters.lend()
        clusters.after(EXP, "completed")
        assert backend.ups[0].downs == ["fake:0"] and "still listed" in clusters.fresh[0]
