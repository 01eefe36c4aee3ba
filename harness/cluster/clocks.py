"""Wall clocks that jump (process backend): with `ClusterSpec.fake_clocks`, each broker and KRaft controller runs
under libfaketime (Debian's `libfaketime`), whose offset it reads from a control file of its own, so that the
`clock_skew` fault can step the node's wall clock by ±N seconds while its monotonic clock runs on, as an NTP step
does.

Owns the environment that loads libfaketime into a node and the control file. Measured with OpenJDK 17: both
`System.currentTimeMillis()` and `Instant.now()` follow the file within a second
(`FAKETIME_CACHE_DURATION=1`), and `System.nanoTime()` does not (`FAKETIME_DONT_FAKE_MONOTONIC=1`). Without
`FAKETIME_FORCE_MONOTONIC_FIX=0` libfaketime's rework of timed condition waits made every sleep of the JVM late
(a program of eight 0.5 s sleeps: 8.4 s against 4.5 s bare; with it, 4.7 s), and a broker missed its 115 s start
deadline; with it, a broker starts as fast as without libfaketime. So Kafka's
`Time.SYSTEM.milliseconds()` (timestamps, retention, transaction and session deadlines computed from wall time)
jumps, and what it measures with `nanoseconds()` does not. The control file lives in the node's directory of the
run: nothing outside the run to clean up."""

from __future__ import annotations

import glob
from pathlib import Path

from harness.errors import BackendError

CONTROL = "faketime"
"""The control file in a node's directory: a signed offset in seconds (`+3600`), libfaketime's format."""


def libfaketime() -> str:
    """The multi-threaded libfaketime library (a JVM has many threads)."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1")
                   + glob.glob("/usr/lib/faketime/libfaketimeMT.so.1"))
    if not found:
        raise BackendError("clock_skew runs the nodes under libfaketime, which is not installed here: apt-get install "
                           "libfaketime (make test and make nightly install it)")
    return found[0]


def faketime_env(node_dir: Path) -> dict[str, str]:
    """The variables that put a node under libfaketime with its own control file (written here, offset 0)."""
    control = node_dir / CONTROL
    if not control.exists():
        set_offset(node_dir, 0)
    return {"LD_PRELOAD": libfaketime(), "FAKETIME_TIMESTAMP_FILE": str(control), "FAKETIME_CACHE_DURATION": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_FORCE_MONOTONIC_FIX": "0"}


def set_offset(node_dir: Path, offset_s: int) -> None:
    """Step the node's wall clock to `offset_s` whole seconds from the real one (read within a second)."""
    node_dir.mkdir(parents=True, exist_ok=True)
    tmp = node_dir / f".{CONTROL}.tmp"
    tmp.write_text(f"{int(offset_s):+d}\n", encoding="ascii")
    tmp.replace(node_dir / CONTROL)
