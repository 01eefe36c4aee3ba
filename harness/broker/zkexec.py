"""The kazoo-backed `ZkExecutor`: runs `harness.model.zkmodel` op values on a real ZooKeeper session.

Owns the mapping op -> kazoo call (Create -> create(ephemeral=...), SetData -> set(version=...),
Delete, GetData/Exists/GetChildren with an optional one-shot watch, Multi -> a kazoo transaction
with Check) and kazoo exception -> `ZkCode`. Blocking: call it from a worker thread
(`asyncio.to_thread`), never on the event loop. Watches call `on_watch(path)` on a kazoo thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadArgumentsError,
    BadVersionError,
    NoChildrenForEphemeralsError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
)
from kazoo.protocol.states import EventType, WatchedEvent

from harness.model.zkmodel import (
    Check,
    Create,
    Delete,
    Exists,
    GetChildren,
    GetData,
    Multi,
    OpResult,
    SetData,
    ZkCode,
    ZkOp,
)

_CODES: tuple[tuple[type[BaseException], ZkCode], ...] = (
    (NodeExistsError, ZkCode.NODE_EXISTS),
    (NoNodeError, ZkCode.NO_NODE),
    (BadVersionError, ZkCode.BAD_VERSION),
    (NotEmptyError, ZkCode.NOT_EMPTY),
    (NoChildrenForEphemeralsError, ZkCode.NO_CHILDREN_FOR_EPHEMERALS),
    (SessionExpiredError, ZkCode.SESSION_EXPIRED),
    (BadArgumentsError, ZkCode.BAD_ARGUMENTS),
)


def code_of(exc: BaseException) -> ZkCode | None:
    for cls, code in _CODES:
        if isinstance(exc, cls):
            return code
    return None


class KazooExecutor:
    """`ZkExecutor` over one kazoo client; `on_watch(path)` is called when a watch left by an op fires."""

    def __init__(self, client: KazooClient, on_watch: Callable[[str], None] | None = None) -> None:
        self.client = client
        self.on_watch = on_watch

    def _watcher(self, watch: bool) -> Callable[[WatchedEvent], None] | None:
        if not watch or self.on_watch is None:
            return None
        cb = self.on_watch

        def fire(event: WatchedEvent) -> None:
            if event.type != EventType.NONE:  # kazoo wakes every watch with type NONE when the session expires
                cb(event.path)
        return fire

    def execute(self, op: ZkOp) -> OpResult:
        path = op.ops[0].path if isinstance(op, Multi) and op.ops else getattr(op, "path", "/")
        try:
            return self._run(op)
        except Exception as exc:
            code = code_of(exc)
            if code is None:
                raise
            return OpResult(code, path)

    def _run(self, op: ZkOp) -> OpResult:
        c = self.client
        if isinstance(op, Create):
            c.create(op.path, op.data, ephemeral=op.ephemeral)
            return OpResult(ZkCode.OK, op.path, op.data, 0)
        if isinstance(op, SetData):
            stat = c.set(op.path, op.data, version=op.version)
            return OpResult(ZkCode.OK, op.path, op.data, stat.version)
        if isinstance(op, Delete):
            c.delete(op.path, version=op.version)
            return OpResult(ZkCode.OK, op.path)
        if isinstance(op, GetData):
            data, stat = c.get(op.path, watch=self._watcher(op.watch))
            return OpResult(ZkCode.OK, op.path, data, stat.version)
        if isinstance(op, Exists):
            stat = c.exists(op.path, watch=self._watcher(op.watch))
            if stat is None:
                return OpResult(ZkCode.NO_NODE, op.path)
            return OpResult(ZkCode.OK, op.path, None, stat.version)
        if isinstance(op, GetChildren):
            children = c.get_children(op.path, watch=self._watcher(op.watch))
            return OpResult(ZkCode.OK, op.path, children=tuple(sorted(children)))
        if isinstance(op, Multi):
            return self._multi(op)
        raise TypeError(f"zkexec: unknown op {op!r}")

    def _multi(self, op: Multi) -> OpResult:
        tx = self.client.transaction()
        for sub in op.ops:
            if isinstance(sub, Create):
                tx.create(sub.path, sub.data, ephemeral=sub.ephemeral)
            elif isinstance(sub, SetData):
                tx.set_data(sub.path, sub.data, version=sub.version)
            elif isinstance(sub, Delete):
                tx.delete(sub.path, version=sub.version)
            elif isinstance(sub, Check):
                tx.check(sub.path, sub.version)
            else:
                raise TypeError(f"zkexec: {type(sub).__name__} is not allowed inside Multi")
        raw: list[Any] = tx.commit()
        results: list[OpResult] = []
        first_error: ZkCode | None = None
        for sub, r in zip(op.ops, raw, strict=False):
            if isinstance(r, BaseException):
                code = code_of(r) or ZkCode.BAD_ARGUMENTS
                if first_error is None and not _is_rollback(r):
                    first_error = code
                results.append(OpResult(code, sub.path))
            elif isinstance(sub, SetData):
                results.append(OpResult(ZkCode.OK, sub.path, sub.data, getattr(r, "version", None)))
            else:
                results.append(OpResult(ZkCode.OK, sub.path))
        if first_error is not None:
            return OpResult(first_error, op.ops[0].path, results=tuple(results))
        return OpResult(ZkCode.OK, op.ops[0].path, results=tuple(results))


def _is_rollback(exc: BaseException) -> bool:
    return type(exc).__name__ in ("RolledBackError", "RuntimeInconsistency")
