"""The hand-startable compose files match the backend's own specs (regenerate with
`python -m harness.cluster.containers_compose` when this fails)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from harness.cluster.containers_compose import COMPOSE_DIR, LAYOUTS, render_compose, write_all


def test_committed_compose_files_are_current(tmp_path: Path) -> None:
    write_all(tmp_path)
    for filename in LAYOUTS:
        for name in (filename, filename.replace(".yml", ".toxiproxy.json")):
            assert (COMPOSE_DIR / name).read_text() == (tmp_path / name).read_text(), f"compose/{name} is stale"


def test_compose_publishes_client_proxies_and_brokers_advertise_them() -> None:
    text, tox = render_compose(3, 3)
    doc = yaml.safe_load(text)
    services = doc["services"]
    assert set(services) == {"zk1", "zk2", "zk3", "toxiproxy", "broker1", "broker2", "broker3"}
    assert "127.0.0.1:19002:19002" in services["toxiproxy"]["ports"]
    env = services["broker2"]["environment"]
    assert env["KAFKA_ADVERTISED_LISTENERS"].endswith("EXTERNAL://localhost:19002")
    assert env["KAFKA_ZOOKEEPER_CONNECT"] == "toxiproxy:21201,toxiproxy:21202,toxiproxy:21203"
    assert services["zk2"]["environment"]["ZOOKEEPER_SERVERS"] == "zk1:2888:3888;zk2:2888:3888;zk3:2888:3888"
    proxies = {p["name"]: p for p in json.loads(tox)}
    assert len(proxies) == 3 * 2 + 3 * 3 + 3
    assert proxies["client->2"] == {"name": "client->2", "listen": "0.0.0.0:19002", "upstream": "broker2:9092",
                                    "enabled": True}
