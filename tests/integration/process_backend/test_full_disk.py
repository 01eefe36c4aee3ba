"""A full disk under the runs directory, as users meet it (issue 36): a real size-limited tmpfs as `--runs-dir`,
filled up by the test once the chaos has begun. The recorder notices the first failed write, the runner stops the
chaos at once, heals and tears down, frees the run's reserve, records what it could and sets run.json to `failed`
with the reason; the CLI says "no space left on <path>: N bytes free" and exits 2, leaving no process running. The
next run on the still-full disk says what it found, refuses with the free bytes, and leaves no directory behind;
once there is room again the failed run verifies as `unknown`, never `pass`. Needs root for the tmpfs mount (CI
runs as root)."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fixtures.processes import events_so_far, leftover_records, processes_mentioning

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXPERIMENT = """
name: full-disk
cluster: {brokers: 1, zookeepers: 1}
topics: [{name: t, partitions: 1, replication_factor: 1}]
workload:
  producers: [{topic: t, rate: 50, acks: all}]
  consumers: [{group: g, topics: [t], members: 1}]
steady_state: [controller_present, all_partitions_led]
steady_timeout: 90s
schedule:
  - {at: 1s, fault: pause, target: broker:1, duration: 3s}
duration: 120s
drain: 5s
"""

TMPFS_SIZE = "64m"
START_TIMEOUT_S = 240.0  # cluster up and the chaos begun, on a busy 2-core machine
EXIT_TIMEOUT_S = 120.0   # the disk filled -> the harness gone: a bound for a hung run, not the figure


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A tmpfs of TMPFS_SIZE, unmounted afterwards (lazily: a test that failed may leave a process in it)."""
    if os.geteuid() != 0:
        pytest.skip("a tmpfs mount needs root (CI runs as root)")
    at = tmp_path / "disk"
    at.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE}", "tmpfs", str(at)], check=True)
    try:
        yield at
    finally:
        subprocess.run(["umount", "-l", str(at)], check=False)


def _fill(disk: Path) -> Path:
    """Write zeros into `disk/filler` until the filesystem refuses (ENOSPC)."""
    filler = disk / "filler"
    block = b"\0" * (256 * 1024)
    with open(filler, "wb", buffering=0) as fh:
        while True:
            try:
                fh.write(block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC, exc
                block = block[: len(block) // 2]
                if len(block) < 512:
                    return filler


def _cli(*args: str, env: dict[str, str], **kw: object) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "harness.cli", *args], env=env, stdin=subprocess.DEVNULL,
                            start_new_session=True, **kw)  # type: ignore[call-overload]


def test_a_full_disk_stops_the_chaos_records_failed_and_exits_2_and_the_next_run_says_so(
    tmp_path: Path, small_disk: Path,
) -> None:
    exp = tmp_path / "full-disk.yaml"
    exp.write_text(EXPERIMENT)
    runs, leftovers = small_disk / "runs", tmp_path / "leftovers"
    env = {**os.environ, "KAFKA_CHAOS_LEFTOVERS_DIR": str(leftovers), "PYTHONUNBUFFERED": "1"}
    out = tmp_path / "harness.out"
    with open(out, "wb") as sink:
        harness = _cli("run", str(exp), "--backend", "process", "--runs-dir", str(runs),
                       env=env, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        run_dir: Path | None = None
        while time.monotonic() < deadline and harness.poll() is None:
            dirs = list(runs.iterdir()) if runs.exists() else []
            run_dir = dirs[0] if dirs else None
            if run_dir is not None and any(e["type"] == "fault.start" for e in events_so_far(run_dir)):
                break
            time.sleep(0.2)
        assert harness.poll() is None and run_dir is not None, (
            f"the chaos never began:\n{out.read_text(errors='replace')[-4000:]}")
        filled = time.monotonic()
        filler = _fill(small_disk)
        rc = harness.wait(EXIT_TIMEOUT_S)
        took = time.monotonic() - filled
    finally:
        if harness.poll() is None:
            harness.kill()
            harness.wait()
    text = out.read_text(errors="replace")
    assert rc == 2, text[-4000:]
    assert f"error: no space left on {run_dir / 'history.jsonl'}: " in text, text[-4000:]
    assert "bytes free" in text
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "failed" and info["error"].startswith("no space left on "), info
    events = events_so_far(run_dir)
    assert events[-1]["type"] == "run.end" and events[-1]["status"] == "failed", events[-3:]
    assert any(e["type"] == "run.error" and str(e["error"]).startswith("no space left on") for e in events)
    assert not any(e["type"] == "phase" and e["name"] == "drain" for e in events)  # the chaos stopped, no drain
    assert leftover_records(leftovers) == []  # every process of the run was stopped and its record removed
    assert [p.pid for p in processes_mentioning(run_dir)] == []
    print(f"full disk: filled -> harness exited {took:.1f} s (rc {rc}); chaos was to last 120 s")

    again = subprocess.run([sys.executable, "-m", "harness.cli", "run", str(exp), "--backend", "process",
                            "--runs-dir", str(runs), "--no-verify"], env=env, capture_output=True, text=True,
                           timeout=300, check=False)
    said = again.stdout + again.stderr
    assert again.returncode == 2, said
    assert f"the last run here, {run_dir}, failed: no space left on" in said, said
    assert f"error: no space left on {runs}: " in said, said
    assert sorted(runs.iterdir()) == [run_dir], "the refused run left a directory behind"

    filler.unlink()
    verify = subprocess.run([sys.executable, "-m", "harness.cli", "verify", str(run_dir)], env=env,
                            capture_output=True, text=True, timeout=600, check=False)
    assert verify.returncode == 1, verify.stdout + verify.stderr
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["status"] == "unknown", verdict["status"]
    assert not (run_dir / ".reserve").exists()
