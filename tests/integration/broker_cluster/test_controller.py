"""Controller election on a 3-broker reference cluster with real ZooKeeper, watched by the ZooKeeper observer."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from harness.cluster.zookeeper import ZooKeeperEnsemble
from harness.observe.zookeeper import ZooKeeperObserver
from tests.fixtures.broker import ReferenceCluster
from tests.fixtures.zookeeper import EventCollector

pytestmark = pytest.mark.integration
SESSION_S = 3.0


def test_controller_kill9_elects_a_new_controller_with_higher_epoch_within_session_timeout(
        reference_cluster_factory: Callable[..., ReferenceCluster], zookeeper: ZooKeeperEnsemble,
        zk_chroot: str, zk_events: EventCollector) -> None:
    """kill -9 of the controller -> a new controller with epoch + 1 within session timeout + 2 s (measured)."""
    cluster = reference_cluster_factory(3)
    with ZooKeeperObserver(zookeeper.connect_string, zk_events, chroot=zk_chroot):
        old, epoch = cluster.controller()
        data = json.loads(cluster.zk.get("/controller")[0])
        assert set(data) == {"version", "brokerid", "timestamp"} and data["version"] == 1
        assert cluster.zk.exists("/controller").ephemeralOwner != 0
        zk_events.wait_for(lambda e: e["type"] == "controller" and e["broker"] == old and e["epoch"] == epoch)
        t0 = time.monotonic()
        cluster[old].kill()
        new, new_epoch = cluster.wait_for(lambda: (c := cluster.controller())[0] not in (-1, old) and c,
                                          SESSION_S + 10, "a new controller")
        took = time.monotonic() - t0
        print(f"\ncontroller failover after kill -9 of {old}: {took:.2f} s -> broker {new}, "
              f"epoch {epoch} -> {new_epoch} (session timeout {SESSION_S} s)")
        assert new_epoch == epoch + 1
        assert took < SESSION_S + 2
        zk_events.wait_for(lambda e: e["type"] == "controller" and e["broker"] == new and e["epoch"] == new_epoch)
        epochs = [e["epoch"] for e in zk_events.of("controller") if e["epoch"] is not None]
        assert epochs == sorted(epochs)


def _wait_log(path: Path, needle: str, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for line in path.read_text(errors="replace").splitlines():
            if needle in line:
                return line
        time.sleep(0.1)
    raise AssertionError(f"no line with {needle!r} in {path} within {timeout_s} s")


@pytest.mark.parametrize("bug", ["", "zombie_controller"])
def test_paused_controller_is_replaced_and_its_stale_requests_are_rejected(
        reference_cluster_factory: Callable[..., ReferenceCluster], bug: str) -> None:
    """SIGSTOP of the controller past the session timeout -> replaced; after SIGCONT the old controller's
    requests (it re-sends metadata every 300 ms) are rejected as STALE_CONTROLLER_EPOCH -- or, with the
    `zombie_controller` bug flag, accepted."""
    props = {"reference.controller.resend.ms": "300", "reference.bugs": bug}
    cluster = reference_cluster_factory(3, props)
    old, epoch = cluster.controller()
    t0 = time.monotonic()
    cluster[old].pause()
    try:
        new, new_epoch = cluster.wait_for(lambda: (c := cluster.controller())[0] not in (-1, old) and c,
                                          SESSION_S + 10, "a new controller")
        print(f"\npaused controller {old} replaced by {new} after {time.monotonic() - t0:.2f} s, "
              f"epoch {epoch} -> {new_epoch}")
        # Resume only once the live brokers learned the new epoch (until then they would obey the zombie too).
        _wait_log(cluster[new].log_path, f"controller {new} failover done", 10)
        time.sleep(0.5)
    finally:
        cluster[old].resume()
    needle = (f"accepted UpdateMetadata from controller {old} with stale epoch {epoch}" if bug else
              f"rejected UpdateMetadata from controller {old}: STALE_CONTROLLER_EPOCH (epoch {epoch} <")
    line = _wait_log(cluster[new].log_path, needle, 10)
    print(line)
    cluster.wait_for(lambda: old in cluster.live_ids(), 3 * SESSION_S + 5, f"broker {old} to register again")
    assert cluster.controller()[1] == new_epoch
