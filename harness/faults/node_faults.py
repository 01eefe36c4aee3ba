"""Faults on nodes: `kill`, `stop`, `pause` and `kill_zookeeper`. A node is a broker, a KRaft controller or a
ZooKeeper member (signals, or docker kill / stop / pause); `kill` and `pause` also take a consumer-group member
the harness drives, and `pause` a producer (its application stops sending). Their effect: the nodes stop
serving (`down`), by a controlled shutdown for `stop` (`graceful`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from harness.cluster.base import NodeId
from harness.errors import HarnessError
from harness.faults.kind import Applied, FaultEnv, KindSpec, TargetSlot, attempt, effect
from harness.faults.resolve import MemberRef, ProducerRef, ResolutionError, resolve_node

if TYPE_CHECKING:
    from harness.faults.kind import MemberControl, ProducerControl
    from harness.faults.schedule import PlannedFault

Acted = NodeId | MemberRef | ProducerRef


def _spec(name: str, help: str, targets: set[TargetSlot], duration: str, heal: str, process: str,
          containers: str) -> KindSpec:
    return KindSpec(name, help, frozenset(targets), (), duration, "down", heal,  # type: ignore[arg-type]
                    MappingProxyType({"process": process, "containers": containers}))


def _member(env: FaultEnv, ref: MemberRef) -> MemberControl:
    control = env.members.get(ref.group)
    if control is None:
        raise ResolutionError(f"{ref}: no consumer group {ref.group!r} is running")
    return control


def _producer(env: FaultEnv, ref: ProducerRef) -> ProducerControl:
    control = env.producers.get(ref.producer_id)
    if control is None:
        raise ResolutionError(f"{ref}: no producer {ref.producer_id!r} is running")
    return control


@dataclass(frozen=True, slots=True)
class _NodeFault:
    """Resolve the target when the fault fires, take it down, bring it back at the heal."""

    spec: KindSpec
    graceful = False
    held = False
    """The heal starts the node (kill, stop): overlapping faults that took one node down start it at the last one's
    heal (`FaultEnv.hold_down`), not at the first, whose start found it running (explore on 3.9.2: the controller
    killed at 11.6 s for 12 s and broker 1, the same node, at 16.7 s for 8 s; the second heal failed `already
    running`, the node back 1 s early)."""

    def apply(self, fault: PlannedFault, env: FaultEnv, done: Applied) -> None:
        assert fault.target is not None
        node = resolve_node(fault.target, env.state, env.topology)
        done.targets.append(str(node))
        self._down(env, node)
        done.nodes.append(node)
        if self.held and isinstance(node, NodeId):
            env.hold_down(node)

    def heal(self, env: FaultEnv, done: Applied) -> list[tuple[str, BaseException]]:
        return attempt([self._up(env, node) for node in done.nodes
                        if not (self.held and isinstance(node, NodeId)) or env.release(node)])

    def describe(self, fault: PlannedFault, done: Applied) -> dict[str, Any]:
        return effect(nodes=done.nodes, down=True, graceful=self.graceful)

    def _down(self, env: FaultEnv, node: Acted) -> None:
        raise NotImplementedError

    def _up(self, env: FaultEnv, node: Acted) -> tuple[str, Callable[[], None]]:
        raise NotImplementedError

    def _refuse(self, node: Acted) -> HarnessError:
        return HarnessError(f"{node}: {self.spec.name!r} does not apply to it")


class Kill(_NodeFault):
    """SIGKILL (docker kill); a consumer member is dropped without leaving its group. Heal: start it again."""

    held = True

    def brings_nodes_back(self) -> bool:
        return True

    def _down(self, env: FaultEnv, node: Acted) -> None:
        if isinstance(node, MemberRef):
            _member(env, node).kill_member(node.index)
        elif isinstance(node, NodeId):
            env.cluster.kill(node)
        else:
            raise self._refuse(node)

    def _up(self, env: FaultEnv, node: Acted) -> tuple[str, Callable[[], None]]:
        if isinstance(node, MemberRef):
            return f"restart {node}", lambda: _member(env, node).restart_member(node.index)
        assert isinstance(node, NodeId)
        return f"start {node}", lambda: env.cluster.start(node)


class Stop(_NodeFault):
    """SIGTERM (docker stop): the broker's controlled shutdown moves its leaderships first. Heal: start it."""

    graceful = True
    held = True

    def brings_nodes_back(self) -> bool:
        return True

    def _down(self, env: FaultEnv, node: Acted) -> None:
        if not isinstance(node, NodeId):
            raise self._refuse(node)
        env.cluster.stop(node)

    def _up(self, env: FaultEnv, node: Acted) -> tuple[str, Callable[[], None]]:
        assert isinstance(node, NodeId)
        return f"start {node}", lambda: env.cluster.start(node)


class Pause(_NodeFault):
    """SIGSTOP (docker pause); a consumer member stops polling, a producer's application stops sending.
    Heal: resume it."""

    def _down(self, env: FaultEnv, node: Acted) -> None:
        if isinstance(node, MemberRef):
            _member(env, node).pause_member(node.index)
        elif isinstance(node, ProducerRef):
            _producer(env, node).pause()
        else:
            env.cluster.pause(node)

    def _up(self, env: FaultEnv, node: Acted) -> tuple[str, Callable[[], None]]:
        if isinstance(node, MemberRef):
            return f"resume {node}", lambda: _member(env, node).resume_member(node.index)
        if isinstance(node, ProducerRef):
            return f"resume {node}", lambda: _producer(env, node).resume()
        return f"resume {node}", lambda: env.cluster.resume(node)


NODE_KINDS: tuple[_NodeFault, ...] = (
    Kill(_spec("kill", "Kill a node abruptly (kill -9): no controlled shutdown; ZooKeeper notices after the "
               "session timeout. A consumer target closes the member without leaving its group.",
               {"broker", "zookeeper", "consumer", "controller"}, "optional", "starts the node again",
               "SIGKILL to the node's process group; consumers: member dropped", "docker kill (SIGKILL)")),
    Stop(_spec("stop", "Stop a broker gracefully (SIGTERM): controlled shutdown moves its leaderships first. A "
               "KRaft controller stops as well (a leader resigns on shutdown).",
               {"broker", "controller"}, "optional", "starts the node again",
               "SIGTERM, wait for exit (SIGKILL after the stop timeout)", "docker stop (SIGTERM, then SIGKILL)")),
    Pause(_spec("pause", "Freeze a node (SIGSTOP): it holds its sockets but answers nothing; past the session "
                "timeout ZooKeeper expires it. A consumer target stops polling. A producer target's application "
                "stops sending, as in a long GC pause (librdkafka delivers what it was given): a transaction it "
                "holds open past transaction.timeout.ms is aborted by the coordinator, which fences the producer; "
                "the producer then starts a new session (`txn.fenced`).",
                {"broker", "zookeeper", "consumer", "producer", "controller"}, "required",
                "resumes the node (SIGCONT)", "SIGSTOP / SIGCONT to the process group; producers: sending held",
                "docker pause / unpause; producers: sending held")),
    Kill(_spec("kill_zookeeper", "Kill a ZooKeeper member (kill -9).", {"zookeeper"}, "optional",
               "starts the member again", "SIGKILL to the member's process group", "docker kill (SIGKILL)")),
)
"""The node kinds, in `kafka-chaos faults` order."""
