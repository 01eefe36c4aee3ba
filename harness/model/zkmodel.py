"""An abstract, in-memory ZooKeeper: the part of ZooKeeper's semantics Kafka's controller relies on.

Owns the ZooKeeper operations as values (`Create`, `SetData`, `Delete`, `Check`, `GetData`,
`GetChildren`, `Exists`, `Multi`), their results (`OpResult` with a `ZkCode`), watch
notifications (`WatchEvent`), and `ZkModel`, an immutable ZooKeeper: sessions, persistent and
ephemeral znodes, versions (conditional writes fail with BAD_VERSION), NODE_EXISTS on a second
create, all-or-nothing `Multi`, one-shot watches returned as notifications, and session
close/expiry deleting that session's ephemerals. Every operation returns a new model (`Step`).

The controller logic (`harness.model.controller`) speaks only these op values through the
`ZkExecutor` protocol, so the reference broker runs it on real ZooKeeper by mapping each op to a
kazoo call (Create -> create(ephemeral=…), SetData -> set(version=…), Check -> transaction.check,
Multi -> transaction) and each kazoo exception to a `ZkCode`. `ZkWorld` is a small mutable
holder of a `ZkModel` for tests and simulations; it is the only mutable thing here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Protocol

from harness.errors import HarnessError

DEFAULT_SESSION_TIMEOUT_MS = 18_000
"""Kafka >= 2.5 default of zookeeper.session.timeout.ms (6000 before). Read the cluster's value."""


def session_expired(last_heard_ms: int, now_ms: int, session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS) -> bool:
    """ZooKeeper expires a session the server has not heard from for longer than its timeout.

    A simulation calls `ZkModel.expire_session` when this turns true; a clean close deletes the
    ephemerals at once (`ZkModel.close_session`).
    """
    return now_ms - last_heard_ms > session_timeout_ms


class ZkCode(Enum):
    """Result codes, named as ZooKeeper's KeeperException codes."""

    OK = "ok"
    NODE_EXISTS = "NodeExists"
    NO_NODE = "NoNode"
    BAD_VERSION = "BadVersion"
    NOT_EMPTY = "NotEmpty"
    NO_CHILDREN_FOR_EPHEMERALS = "NoChildrenForEphemerals"
    SESSION_EXPIRED = "SessionExpired"
    BAD_ARGUMENTS = "BadArguments"


class ZkModelError(HarnessError):
    """Misuse of the ZooKeeper model itself (malformed path, unknown op)."""


@dataclass(frozen=True, slots=True)
class Create:
    path: str
    data: bytes = b""
    ephemeral: bool = False


@dataclass(frozen=True, slots=True)
class SetData:
    path: str
    data: bytes
    version: int = -1
    """Expected current version; -1 matches any."""


@dataclass(frozen=True, slots=True)
class Delete:
    path: str
    version: int = -1


@dataclass(frozen=True, slots=True)
class Check:
    """Multi-only precondition: the node exists at `version`."""

    path: str
    version: int


@dataclass(frozen=True, slots=True)
class GetData:
    path: str
    watch: bool = False


@dataclass(frozen=True, slots=True)
class GetChildren:
    path: str
    watch: bool = False


@dataclass(frozen=True, slots=True)
class Exists:
    """Like GetData but a watch is left even when the node does not exist (fires on creation)."""

    path: str
    watch: bool = False


@dataclass(frozen=True, slots=True)
class Multi:
    ops: tuple[Create | SetData | Delete | Check, ...]


ZkOp = Create | SetData | Delete | Check | GetData | GetChildren | Exists | Multi


@dataclass(frozen=True, slots=True)
class Znode:
    data: bytes
    version: int = 0
    ephemeral_owner: int | None = None


@dataclass(frozen=True, slots=True)
class OpResult:
    """Outcome of one op. For `Multi`, `code` is the first failure (or OK) and `results` holds each op's."""

    code: ZkCode
    path: str
    data: bytes | None = None
    version: int | None = None
    children: tuple[str, ...] | None = None
    results: tuple[OpResult, ...] = ()

    @property
    def ok(self) -> bool:
        return self.code is ZkCode.OK


class WatchKind(Enum):
    NODE_CREATED = "NodeCreated"
    NODE_DELETED = "NodeDeleted"
    NODE_DATA_CHANGED = "NodeDataChanged"
    NODE_CHILDREN_CHANGED = "NodeChildrenChanged"


@dataclass(frozen=True, slots=True)
class WatchEvent:
    """A one-shot watch that fired: deliver `kind` on `path` to `session`."""

    session: int
    path: str
    kind: WatchKind


def parent_of(path: str) -> str:
    return path.rsplit("/", 1)[0] or "/"


def _check_path(path: str) -> None:
    if not path.startswith("/") or (path != "/" and path.endswith("/")) or "//" in path:
        raise ZkModelError(f"zkmodel: malformed znode path {path!r}")


@dataclass(frozen=True, slots=True)
class Step:
    """The model after an operation, the operation's result (None for session events), and fired watches."""

    model: ZkModel
    result: OpResult | None
    events: tuple[WatchEvent, ...] = ()


@dataclass(frozen=True)
class ZkModel:
    """An immutable ZooKeeper. Start with `ZkModel()` (only "/"), then `open_session`, `apply`, ..."""

    nodes: Mapping[str, Znode] = field(default_factory=lambda: {"/": Znode(b"")})
    sessions: frozenset[int] = frozenset()
    next_session: int = 1
    data_watches: Mapping[str, frozenset[int]] = field(default_factory=dict)
    child_watches: Mapping[str, frozenset[int]] = field(default_factory=dict)

    def open_session(self) -> tuple[ZkModel, int]:
        sid = self.next_session
        return replace(self, sessions=self.sessions | {sid}, next_session=sid + 1), sid

    def children(self, path: str) -> tuple[str, ...]:
        return _children(self.nodes, path)

    def get(self, path: str) -> Znode | None:
        return self.nodes.get(path)

    def with_persistent(self, *paths: str) -> ZkModel:
        """Create each path and its parents as empty persistent nodes (bootstrap convenience)."""
        nodes = dict(self.nodes)
        for path in paths:
            _check_path(path)
            parts = path.strip("/").split("/")
            for i in range(1, len(parts) + 1):
                nodes.setdefault("/" + "/".join(parts[:i]), Znode(b""))
        return replace(self, nodes=nodes)

    def apply(self, session: int, op: ZkOp) -> Step:
        """Run `op` on behalf of `session`; an unknown/expired session gets SESSION_EXPIRED."""
        path = op.ops[0].path if isinstance(op, Multi) and op.ops else getattr(op, "path", "/")
        if session not in self.sessions:
            return Step(self, OpResult(ZkCode.SESSION_EXPIRED, path))
        tx = _Tx(self)
        if isinstance(op, Multi):
            results: list[OpResult] = []
            for sub in op.ops:
                if not isinstance(sub, (Create, SetData, Delete, Check)):
                    raise ZkModelError(f"zkmodel: {type(sub).__name__} is not allowed inside Multi")
                res = tx.run(session, sub)
                results.append(res)
                if not res.ok:
                    return Step(self, OpResult(res.code, res.path, results=tuple(results)))
            return tx.commit(OpResult(ZkCode.OK, path, results=tuple(results)))
        return tx.commit(tx.run(session, op))

    def close_session(self, session: int) -> Step:
        """Clean close or expiry: the session's ephemerals vanish (firing watches), its watches go."""
        if session not in self.sessions:
            return Step(self, None)
        tx = _Tx(self)
        for path in sorted((p for p, n in self.nodes.items() if n.ephemeral_owner == session), reverse=True):
            tx.run(session, Delete(path))
        tx.sessions.discard(session)
        for watches in (tx.data_watches, tx.child_watches):
            for p in list(watches):
                watches[p] = watches[p] - {session}
                if not watches[p]:
                    del watches[p]
        tx.events = [e for e in tx.events if e.session != session]
        return tx.commit(None)

    expire_session = close_session


class _Tx:
    """Mutable scratch copy used inside one `apply`; discarded unless committed."""

    def __init__(self, model: ZkModel) -> None:
        self.model = model
        self.nodes = dict(model.nodes)
        self.sessions = set(model.sessions)
        self.data_watches = dict(model.data_watches)
        self.child_watches = dict(model.child_watches)
        self.events: list[WatchEvent] = []

    def commit(self, result: OpResult | None) -> Step:
        model = replace(
            self.model,
            nodes=self.nodes,
            sessions=frozenset(self.sessions),
            data_watches=self.data_watches,
            child_watches=self.child_watches,
        )
        return Step(model, result, tuple(self.events))

    def _fire(self, watches: dict[str, frozenset[int]], path: str, kind: WatchKind) -> None:
        for sid in sorted(watches.pop(path, frozenset())):
            self.events.append(WatchEvent(sid, path, kind))

    def _watch(self, watches: dict[str, frozenset[int]], path: str, session: int) -> None:
        watches[path] = watches.get(path, frozenset()) | {session}

    def run(self, session: int, op: ZkOp) -> OpResult:
        if isinstance(op, Multi):
            raise ZkModelError("zkmodel: Multi cannot be nested")
        _check_path(op.path)
        node = self.nodes.get(op.path)
        if isinstance(op, Create):
            return self._create(session, op, node)
        if isinstance(op, (GetData, Exists)):
            if op.watch and (node is not None or isinstance(op, Exists)):
                self._watch(self.data_watches, op.path, session)
            if node is None:
                return OpResult(ZkCode.NO_NODE, op.path)
            data = None if isinstance(op, Exists) else node.data  # exists() returns a Stat only
            return OpResult(ZkCode.OK, op.path, data, node.version)
        if node is None:
            return OpResult(ZkCode.NO_NODE, op.path)
        if isinstance(op, GetChildren):
            if op.watch:
                self._watch(self.child_watches, op.path, session)
            return OpResult(ZkCode.OK, op.path, version=node.version, children=_children(self.nodes, op.path))
        if op.version not in (-1, node.version):
            return OpResult(ZkCode.BAD_VERSION, op.path, version=node.version)
        if isinstance(op, Check):
            return OpResult(ZkCode.OK, op.path, version=node.version)
        if isinstance(op, SetData):
            self.nodes[op.path] = replace(node, data=op.data, version=node.version + 1)
            self._fire(self.data_watches, op.path, WatchKind.NODE_DATA_CHANGED)
            return OpResult(ZkCode.OK, op.path, op.data, node.version + 1)
        if op.path == "/" or _children(self.nodes, op.path):
            return OpResult(ZkCode.NOT_EMPTY, op.path)
        del self.nodes[op.path]
        self._fire(self.data_watches, op.path, WatchKind.NODE_DELETED)
        self._fire(self.child_watches, op.path, WatchKind.NODE_DELETED)
        self._fire(self.child_watches, parent_of(op.path), WatchKind.NODE_CHILDREN_CHANGED)
        return OpResult(ZkCode.OK, op.path)

    def _create(self, session: int, op: Create, node: Znode | None) -> OpResult:
        parent = self.nodes.get(parent_of(op.path))
        if op.path == "/" or node is not None:
            return OpResult(ZkCode.NODE_EXISTS, op.path)
        if parent is None:
            return OpResult(ZkCode.NO_NODE, op.path)
        if parent.ephemeral_owner is not None:
            return OpResult(ZkCode.NO_CHILDREN_FOR_EPHEMERALS, op.path)
        self.nodes[op.path] = Znode(op.data, 0, session if op.ephemeral else None)
        self._fire(self.data_watches, op.path, WatchKind.NODE_CREATED)
        self._fire(self.child_watches, parent_of(op.path), WatchKind.NODE_CHILDREN_CHANGED)
        return OpResult(ZkCode.OK, op.path, op.data, 0)


def _children(nodes: Mapping[str, Znode], path: str) -> tuple[str, ...]:
    prefix = "/" if path == "/" else path + "/"
    return tuple(sorted(p[len(prefix):] for p in nodes if p != "/" and p.startswith(prefix)
                        and "/" not in p[len(prefix):]))


class ZkExecutor(Protocol):
    """Runs one op for one session and returns its result: a `ZkWorld` session or a kazoo adapter."""

    def execute(self, op: ZkOp) -> OpResult: ...


class ZkWorld:
    """A mutable box around a `ZkModel` that records fired watch events (tests, simulations)."""

    def __init__(self, model: ZkModel | None = None) -> None:
        self.model = model if model is not None else ZkModel()
        self.events: list[WatchEvent] = []

    def open_session(self) -> ZkSession:
        self.model, sid = self.model.open_session()
        return ZkSession(self, sid)

    def apply(self, session: int, op: ZkOp) -> OpResult:
        step = self.model.apply(session, op)
        self.model = step.model
        self.events.extend(step.events)
        assert step.result is not None
        return step.result

    def expire(self, session: int) -> tuple[WatchEvent, ...]:
        step = self.model.expire_session(session)
        self.model = step.model
        self.events.extend(step.events)
        return step.events

    def take_events(self, session: int | None = None) -> list[WatchEvent]:
        """Remove and return the recorded events (all, or those for `session`)."""
        taken = [e for e in self.events if session is None or e.session == session]
        self.events = [e for e in self.events if e not in taken]
        return taken


@dataclass(frozen=True, slots=True)
class ZkSession:
    """One session of a `ZkWorld`; implements `ZkExecutor`."""

    world: ZkWorld
    session_id: int

    def execute(self, op: ZkOp) -> OpResult:
        return self.world.apply(self.session_id, op)

    def expire(self) -> tuple[WatchEvent, ...]:
        return self.world.expire(self.session_id)
