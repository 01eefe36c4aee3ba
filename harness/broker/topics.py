"""The broker's topics and their partition logs across `log.dirs`, and the data-arrival signal.

Owns: loading every `<topic>-<partition>` directory at start-up (so a restarted broker serves what
it had), the local logs of the partitions this broker hosts (created when a LeaderAndIsr names it
a replica -- the assignment itself lives in ZooKeeper -- removed by StopReplica with delete, new
ones go to the log dir holding the fewest), per-topic config overrides as last received (persisted
in `<first log dir>/topic-configs.json`), `meta.properties`, and waking long-polling fetches when
a partition receives data.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from harness.broker.config import BrokerConfig
from harness.broker.log import LogSettings, PartitionLog
from harness.errors import HarnessError

log = logging.getLogger(__name__)
OFFSETS_TOPIC = "__consumer_offsets"
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
_DIR = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


class TopicError(HarnessError):
    """A topic cannot be created, loaded or deleted."""


def topic_name_problem(name: str) -> str | None:
    """Kafka's topic-name rule; None when legal."""
    if not name or name in (".", ".."):
        return "topic name is empty, '.' or '..'"
    if len(name) > 249:
        return f"topic name is longer than 249 characters ({len(name)})"
    if not _LEGAL.match(name):
        return f"topic name {name!r} has characters outside [a-zA-Z0-9._-]"
    return None


@dataclass(slots=True)
class Topic:
    name: str
    partitions: dict[int, PartitionLog]
    configs: dict[str, str] = field(default_factory=dict)

    @property
    def internal(self) -> bool:
        return self.name == OFFSETS_TOPIC


class TopicStore:
    """Every topic on this broker's disks."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.dirs = [Path(d) for d in config.log_dirs]
        self.topics: dict[str, Topic] = {}
        self._waiters: dict[tuple[str, int], list[asyncio.Future[None]]] = {}
        for d in self.dirs:
            d.mkdir(parents=True, exist_ok=True)
        self._configs_path = self.dirs[0] / "topic-configs.json"

    # ---- lifecycle -------------------------------------------------------------------------
    def settings_for(self, topic: str, configs: dict[str, str] | None = None) -> LogSettings:
        cfg = self.config
        overrides = configs or {}
        seg = cfg.offsets_topic_segment_bytes if topic == OFFSETS_TOPIC else cfg.log_segment_bytes
        return LogSettings(
            segment_bytes=int(overrides.get("segment.bytes", seg)),
            index_interval_bytes=int(overrides.get("index.interval.bytes", cfg.log_index_interval_bytes)),
            flush_interval_messages=int(overrides.get("flush.messages", cfg.log_flush_interval_messages)),
        )

    def load(self) -> None:
        """Open every partition directory found under log.dirs (recovering torn tails)."""
        saved = self._read_configs()
        found: dict[str, dict[int, Path]] = {}
        for d in self.dirs:
            for child in sorted(d.iterdir()):
                m = _DIR.match(child.name)
                if child.is_dir() and m and not topic_name_problem(m["topic"]):
                    found.setdefault(m["topic"], {})[int(m["partition"])] = child
        for name, parts in sorted(found.items()):
            configs = saved.get(name, {})
            settings = self.settings_for(name, configs)
            logs = {p: PartitionLog(parts[p], settings) for p in sorted(parts)}
            self.topics[name] = Topic(name, logs, configs)
            log.info("loaded topic %s: partitions %s, end offsets %s", name, sorted(logs),
                     [x.log_end_offset for x in logs.values()])

    def close(self) -> None:
        for t in self.topics.values():
            for p in t.partitions.values():
                p.close()
        self.topics.clear()

    def write_meta(self, cluster_id: str) -> None:
        for d in self.dirs:
            tmp = d / "meta.properties.tmp"
            tmp.write_text(f"version=0\nbroker.id={self.config.broker_id}\ncluster.id={cluster_id}\n")
            os.replace(tmp, d / "meta.properties")

    # ---- create / delete -------------------------------------------------------------------
    def create(self, name: str, partitions: int, configs: dict[str, str] | None = None) -> Topic:
        """Create a topic with local logs for partitions 0..partitions-1 (a one-broker topic)."""
        problem = topic_name_problem(name)
        if problem:
            raise TopicError(problem)
        if name in self.topics:
            raise TopicError(f"topic {name} already exists")
        topic = self.ensure_partition(name, 0, configs) if partitions > 0 else None
        for p in range(1, partitions):
            self.ensure_partition(name, p, configs)
        log.info("created topic %s with %d partitions %s", name, partitions, configs or "")
        return topic or self.topics[name]

    def ensure_partition(self, name: str, partition: int, configs: dict[str, str] | None = None) -> Topic:
        """The local log of one partition this broker hosts (created empty if missing); configs updated."""
        topic = self.topics.get(name)
        if topic is None:
            problem = topic_name_problem(name)
            if problem:
                raise TopicError(problem)
            topic = self.topics[name] = Topic(name, {}, dict(configs or {}))
            if configs:
                self._write_configs()
        elif configs is not None and configs != topic.configs:
            topic.configs = dict(configs)
            self._write_configs()
        if partition not in topic.partitions:
            settings = self.settings_for(name, topic.configs)
            topic.partitions[partition] = PartitionLog(self._least_used_dir() / f"{name}-{partition}", settings)
        return topic

    def remove_partition(self, name: str, partition: int) -> None:
        """Delete one hosted partition's log (StopReplica with delete)."""
        topic = self.topics.get(name)
        if topic is None or partition not in topic.partitions:
            return
        plog = topic.partitions.pop(partition)
        plog.close()
        shutil.rmtree(plog.dir, ignore_errors=True)
        if not topic.partitions:
            self.topics.pop(name, None)
            if topic.configs:
                self._write_configs()
        self.notify(name, partition)

    def delete(self, name: str) -> None:
        topic = self.topics.pop(name)
        for p in topic.partitions.values():
            p.close()
            shutil.rmtree(p.dir, ignore_errors=True)
        if topic.configs:
            self._write_configs()
        for i in topic.partitions:
            self.notify(name, i)
        log.info("deleted topic %s", name)

    def _least_used_dir(self) -> Path:
        counts = {d: sum(1 for c in d.iterdir() if c.is_dir()) for d in self.dirs}
        return min(self.dirs, key=lambda d: counts[d])

    def _read_configs(self) -> dict[str, dict[str, str]]:
        try:
            data = json.loads(self._configs_path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise TopicError(f"{self._configs_path}: unreadable topic configs: {exc}") from exc
        return {str(k): {str(a): str(b) for a, b in v.items()} for k, v in data.items()}

    def _write_configs(self) -> None:
        data = {n: t.configs for n, t in self.topics.items() if t.configs}
        tmp = self._configs_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, sort_keys=True))
        os.replace(tmp, self._configs_path)

    # ---- lookup ----------------------------------------------------------------------------
    def partition(self, topic: str, partition: int) -> PartitionLog | None:
        t = self.topics.get(topic)
        return t.partitions.get(partition) if t is not None else None

    def topic_config(self, topic: str, name: str, default: str) -> str:
        t = self.topics.get(topic)
        return t.configs.get(name, default) if t else default

    # ---- data-arrival signal ---------------------------------------------------------------
    def waiter(self, keys: list[tuple[str, int]]) -> asyncio.Future[None]:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for k in keys:
            self._waiters.setdefault(k, []).append(fut)
        return fut

    def forget(self, keys: list[tuple[str, int]], fut: asyncio.Future[None]) -> None:
        for k in keys:
            lst = self._waiters.get(k)
            if lst is not None:
                with contextlib.suppress(ValueError):
                    lst.remove(fut)
                if not lst:
                    del self._waiters[k]

    def notify(self, topic: str, partition: int) -> None:
        for fut in self._waiters.pop((topic, partition), ()):
            if not fut.done():
                fut.set_result(None)
