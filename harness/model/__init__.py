"""The executable specification of ../shared/KAFKA-BEHAVIOUR.md: pure functions and small state machines.

Nothing here does I/O, starts threads or reads a clock (time is always an argument), so the same
code is the reference broker's decision logic and the verifiers' oracle. Modules:

- `election`        partition leader election strategies (§2): `elect_leader`, `elect`.
- `partition_state` the partition state znode value (`PartitionState`) and the partition state machine.
- `isr`             ISR shrink/expand, high watermark, acks / min.insync.replicas decisions (§3).
- `zkmodel`         an in-memory, immutable model of ZooKeeper (sessions, ephemerals, versions, watches).
- `controller`      controller election and the controller's decisions on failover, broker loss/return,
                    controlled shutdown and preferred-replica election (§1, §2).
- `assignors`       librdkafka's range and roundrobin assignors, a sticky assignor, and property checks (§5).
- `coordinator`     group coordinator lookup: Java `String.hashCode` and `Utils.abs` (§4).
- `partitioner`     producer partitioners: Kafka's murmur2 and librdkafka's consistent (CRC32) (§6).
- `group`           the group coordinator state machine (§4; owned by the broker's author).

Import the submodule you need (`from harness.model.election import elect_leader`); this package
imports none of them eagerly.
"""
