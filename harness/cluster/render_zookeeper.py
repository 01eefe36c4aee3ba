"""ZooKeeper's config file: one ensemble member's `zoo.cfg` from `compose/templates/zoo.cfg.tmpl` (both backends).
A pure function, as the rest of the rendering (`harness.cluster.render`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template

from harness.cluster.render import load_template
from harness.errors import ConfigError


@dataclass(frozen=True, slots=True)
class ZooKeeperServer:
    """One ensemble member as zoo.cfg's `server.N=host:peer:election` line names it."""

    id: int
    host: str
    client_port: int
    peer_port: int
    election_port: int


def render_zoo_cfg(
    member_id: int, members: Sequence[ZooKeeperServer], *, data_dir: str, tick_ms: int = 2000,
    min_session_timeout_ms: int = 4000, max_session_timeout_ms: int = 40000, client_host: str | None = None,
    templates_dir: Path | None = None,
) -> str:
    """Member `member_id`'s zoo.cfg; a one-member ensemble gets no `server.` lines (standalone)."""
    me = next((m for m in members if m.id == member_id), None)
    if me is None:
        raise ConfigError(f"zookeeper:{member_id} is not among members {[m.id for m in members]}")
    servers = "" if len(members) == 1 else "\n".join(
        f"server.{m.id}={m.host}:{m.peer_port}:{m.election_port}" for m in members)
    values = {
        "member_id": str(member_id), "members": str(len(members)), "tick_ms": str(tick_ms),
        "data_dir": data_dir, "client_port": str(me.client_port), "client_host": client_host or me.host,
        "min_session_timeout_ms": str(min_session_timeout_ms),
        "max_session_timeout_ms": str(max_session_timeout_ms), "servers": servers,
    }
    return Template(load_template("zoo.cfg.tmpl", templates_dir)).substitute(values)
