"""Packet loss on a link of the process backend: iptables rules that drop a random fraction of the packets to and
from one link's Toxiproxy listener (`-m statistic --mode random`), on the loopback interface. The connections stay
open: TCP retransmits what was dropped, so the link turns slow and bursty instead of failing.

Owns the rules and their clean-up. A rule matches only the run's own listener port (`--dport` for what the link's
source sends, `--sport` for what comes back), so nothing outside the run is touched. Every rule carries a comment
naming its owner (`kafka-chaos:<pid>:<start time>`): `PacketRules` deletes its rules when the fault heals and at
teardown, and `clean_packet_leftovers` (run by `clean_leftovers`: the reaper after a SIGKILL of the harness, and the
next run) deletes the rules of owners that are gone. Needs root and iptables; without them, a BackendError says so.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import threading

from harness.cluster.owners import owner_alive, this_owner
from harness.errors import BackendError

CHAIN = "INPUT"
_COMMENT = re.compile(r"kafka-chaos:(\d+):([0-9.]+)")
_TIMEOUT_S = 30.0


def _iptables() -> str:
    found = shutil.which("iptables", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin")
    if found is None:
        raise BackendError("packet_loss needs iptables (Debian: apt-get install iptables) and root")
    return found


def _run(args: list[str], what: str) -> str:
    argv = [_iptables(), "-w", "10", *args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BackendError(f"{what}: {shlex.join(argv)} failed: {exc}") from exc
    if done.returncode != 0:
        raise BackendError(f"{what}: {shlex.join(argv)} exited {done.returncode}: {done.stderr.strip()} "
                           "(packet_loss needs root and iptables' statistic match)")
    return done.stdout


def _rule(port: int, direction: str, probability: float, owner: str) -> list[str]:
    return ["-i", "lo", "-p", "tcp", direction, str(port), "-m", "statistic", "--mode", "random",
            "--probability", f"{probability:.6f}", "-m", "comment", "--comment", owner, "-j", "DROP"]


class PacketRules:
    """The packet-loss rules of one cluster: `drop` adds a pair (both directions of one listener), `undrop` removes
    it, `remove_all` removes what is left (teardown)."""

    def __init__(self) -> None:
        pid, started = this_owner()
        self.owner = f"kafka-chaos:{pid}:{started:.2f}"
        self._active: dict[str, list[list[str]]] = {}
        self._lock = threading.Lock()
        self._n = 0

    def drop(self, port: int, probability: float, what: str) -> str:
        """Drop `probability` of the packets to and from listener `port`; a handle for `undrop`."""
        if not 0.0 < probability <= 1.0:
            raise BackendError(f"{what}: a packet loss probability is in (0, 1], got {probability}")
        rules = [_rule(port, d, probability, self.owner) for d in ("--dport", "--sport")]
        with self._lock:
            self._n += 1
            handle = f"{what}#{self._n}"
            self._active[handle] = []
        for rule in rules:
            _run(["-I", CHAIN, *rule], what)
            with self._lock:
                self._active[handle].append(rule)
        return handle

    def undrop(self, handle: str) -> None:
        with self._lock:
            rules = self._active.pop(handle, [])
        failures = []
        for rule in rules:
            try:
                _run(["-D", CHAIN, *rule], handle)
            except BackendError as exc:
                failures.append(str(exc))
        if failures:
            raise BackendError("; ".join(failures))

    def remove_all(self) -> list[tuple[str, BaseException]]:
        failures: list[tuple[str, BaseException]] = []
        with self._lock:
            handles = list(self._active)
        for handle in handles:
            try:
                self.undrop(handle)
            except BackendError as exc:
                failures.append((f"remove the packet loss rules of {handle}", exc))
        return failures


def clean_packet_leftovers() -> list[str]:
    """Delete the packet-loss rules of harnesses that are gone; the rules deleted (as `iptables -S` lists them).
    Where iptables is missing or refuses to list (no root), there is nothing this harness could have added."""
    try:
        listing = _run(["-S", CHAIN], "list the packet loss rules")
    except BackendError:
        return []
    cleaned: list[str] = []
    for line in listing.splitlines():
        found = _COMMENT.search(line)
        if not line.startswith(f"-A {CHAIN} ") or found is None:
            continue
        if owner_alive(int(found.group(1)), float(found.group(2))):
            continue
        _run(["-D", *shlex.split(line)[1:]], "delete a leftover packet loss rule")
        cleaned.append(line)
    return cleaned

