"""Ports for the servers a backend starts are drawn below the kernel's ephemeral range, where no outgoing
connection takes one (bind to port 0 only where that range leaves too few ports below it), and a drawn port is
reserved so that another harness does not draw it before its server binds it."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from harness.cluster import ports
from harness.cluster.ports import PORT_FLOOR, allocate_ports, ephemeral_range


@pytest.fixture(autouse=True)
def _own_reservations(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Each test reserves in a directory of its own (not the per-user cache other test workers draw from)."""
    directory = tmp_path / "reservations"
    monkeypatch.setattr(ports, "RESERVATIONS_DIR", directory)
    return directory


def test_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    low, _ = ephemeral_range()
    drawn = allocate_ports(40)
    assert len(set(drawn)) == 40
    if low - PORT_FLOOR >= 1000:
        assert all(PORT_FLOOR <= p < low for p in drawn)
    for p in drawn[:5]:
        with socket.socket() as s:
            s.bind(("127.0.0.1", p))


def test_a_port_in_use_is_never_drawn(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """With a range of 1000 ports, one of them held by a listening server, drawing every other free one never
    yields the held one."""
    (tmp_path / "range").write_text(f"{PORT_FLOOR + 1000}\t60999\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE_FILE", tmp_path / "range")
    held = next(p for p in range(PORT_FLOOR, PORT_FLOOR + 1000) if _free(p))
    with socket.socket() as server:
        server.bind(("127.0.0.1", held))
        server.listen()
        free = sum(1 for p in range(PORT_FLOOR, PORT_FLOOR + 1000) if _free(p))
        drawn = allocate_ports(free)
    assert held not in drawn and len(set(drawn)) == free


def test_the_kernel_chooses_where_the_ephemeral_range_starts_low(monkeypatch: pytest.MonkeyPatch,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "range").write_text("1024 65535\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE_FILE", tmp_path / "range")
    assert len(set(allocate_ports(5))) == 5


def test_a_port_another_harness_drew_a_moment_ago_is_not_drawn_until_its_reservation_expires(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, _own_reservations: Path) -> None:
    """Two allocators over the same 1000 ports: the second never draws what the first holds; once the first's
    reservations are older than RESERVATION_S they can be reserved again."""
    (tmp_path / "range").write_text(f"{PORT_FLOOR + 1000}\t60999\n")
    monkeypatch.setattr(ports, "EPHEMERAL_RANGE_FILE", tmp_path / "range")
    first = set(allocate_ports(400))
    assert {int(p.name) for p in _own_reservations.iterdir()} == first
    second = set(allocate_ports(400))
    assert not first & second
    old = time.time() - ports.RESERVATION_S - 1
    for port in first:
        os.utime(_own_reservations / str(port), (old, old))
    assert all(ports._reserve(_own_reservations, port) for port in first)
    assert not any(ports._reserve(_own_reservations, port) for port in second)


def test_an_unreadable_range_file_means_linuxs_default(tmp_path: Path) -> None:
    assert ephemeral_range(tmp_path / "missing") == (32768, 60999)


def _free(port: int) -> bool:
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", port))
    except OSError:
        return False
    return True
