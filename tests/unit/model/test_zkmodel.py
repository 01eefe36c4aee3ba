"""The abstract in-memory ZooKeeper: ephemerals, NodeExists, versions, Multi atomicity, watches, expiry."""

from __future__ import annotations

import pytest

from harness.model.zkmodel import (
    Check,
    Create,
    Delete,
    Exists,
    GetChildren,
    GetData,
    Multi,
    SetData,
    WatchEvent,
    WatchKind,
    ZkCode,
    ZkModel,
    ZkModelError,
    ZkWorld,
    session_expired,
)


def test_model_is_immutable_each_op_returns_a_new_model() -> None:
    m0, sid = ZkModel().open_session()
    step = m0.apply(sid, Create("/a", b"x"))
    assert step.result is not None and step.result.ok
    assert m0.get("/a") is None and step.model.get("/a") is not None


def test_second_create_gets_node_exists_and_missing_parent_no_node() -> None:
    w = ZkWorld()
    s = w.open_session()
    assert s.execute(Create("/c", b"1", ephemeral=True)).ok
    assert s.execute(Create("/c", b"2")).code is ZkCode.NODE_EXISTS
    assert s.execute(Create("/x/y")).code is ZkCode.NO_NODE
    assert s.execute(Create("/c/child")).code is ZkCode.NO_CHILDREN_FOR_EPHEMERALS


def test_conditional_set_and_delete_use_versions() -> None:
    w = ZkWorld()
    s = w.open_session()
    s.execute(Create("/v", b"0"))
    assert s.execute(SetData("/v", b"1", version=0)).version == 1
    assert s.execute(SetData("/v", b"2", version=0)).code is ZkCode.BAD_VERSION
    assert s.execute(GetData("/v")).data == b"1"
    assert s.execute(SetData("/v", b"3")).version == 2, "-1 matches any version"
    assert s.execute(Delete("/v", version=1)).code is ZkCode.BAD_VERSION
    assert s.execute(Delete("/v", version=2)).ok


def test_delete_with_children_is_not_empty() -> None:
    w = ZkWorld(ZkModel().with_persistent("/brokers/ids"))
    s = w.open_session()
    assert s.execute(Delete("/brokers")).code is ZkCode.NOT_EMPTY
    assert s.execute(GetChildren("/brokers")).children == ("ids",)


def test_multi_is_all_or_nothing() -> None:
    w = ZkWorld()
    s = w.open_session()
    s.execute(Create("/e", b"0"))
    res = s.execute(Multi((Create("/new", b""), Check("/e", 5), SetData("/e", b"9"))))
    assert res.code is ZkCode.BAD_VERSION and [r.code for r in res.results] == [ZkCode.OK, ZkCode.BAD_VERSION]
    assert w.model.get("/new") is None and s.execute(GetData("/e")).data == b"0"
    res = s.execute(Multi((Create("/new", b""), Check("/e", 0), SetData("/e", b"9"))))
    assert res.ok and w.model.get("/new") is not None and res.results[2].version == 1


def test_session_expiry_deletes_only_its_ephemerals_and_fires_watches() -> None:
    w = ZkWorld(ZkModel().with_persistent("/brokers/ids"))
    a, b = w.open_session(), w.open_session()
    a.execute(Create("/brokers/ids/1", b"{}", ephemeral=True))
    b.execute(Create("/brokers/ids/2", b"{}", ephemeral=True))
    a.execute(Create("/persistent", b""))
    b.execute(GetChildren("/brokers/ids", watch=True))
    b.execute(Exists("/brokers/ids/1", watch=True))
    a.expire()
    assert w.model.children("/brokers/ids") == ("2",) and w.model.get("/persistent") is not None
    assert set(w.take_events(b.session_id)) == {
        WatchEvent(b.session_id, "/brokers/ids/1", WatchKind.NODE_DELETED),
        WatchEvent(b.session_id, "/brokers/ids", WatchKind.NODE_CHILDREN_CHANGED),
    }
    assert a.execute(GetData("/persistent")).code is ZkCode.SESSION_EXPIRED


def test_watches_are_one_shot_and_exists_watch_fires_on_creation() -> None:
    w = ZkWorld()
    a, b = w.open_session(), w.open_session()
    assert b.execute(Exists("/controller", watch=True)).code is ZkCode.NO_NODE
    a.execute(Create("/controller", b"1", ephemeral=True))
    assert w.take_events() == [WatchEvent(b.session_id, "/controller", WatchKind.NODE_CREATED)]
    b.execute(GetData("/controller", watch=True))
    a.execute(SetData("/controller", b"2"))
    a.execute(SetData("/controller", b"3"))
    assert w.take_events() == [WatchEvent(b.session_id, "/controller", WatchKind.NODE_DATA_CHANGED)]


def test_getdata_on_missing_node_leaves_no_watch() -> None:
    w = ZkWorld()
    a = w.open_session()
    a.execute(GetData("/nope", watch=True))
    a.execute(Create("/nope"))
    assert w.take_events() == []


def test_malformed_paths_are_rejected() -> None:
    w = ZkWorld()
    s = w.open_session()
    for bad in ("relative", "/trailing/", "/a//b"):
        with pytest.raises(ZkModelError, match="malformed"):
            s.execute(Create(bad))


def test_session_expires_only_after_timeout_without_heartbeat() -> None:
    assert not session_expired(last_heard_ms=1_000, now_ms=7_000, session_timeout_ms=6_000)
    assert session_expired(1_000, 7_001, 6_000)
