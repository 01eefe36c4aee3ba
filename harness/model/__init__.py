"""The executable specification of docs/kafka-behaviour.md: pure functions, no I/O.

Nothing here does I/O, starts threads or reads a clock (time is always an argument); the verifiers use it
as their oracle and the experiment loader as Kafka's own validation. Modules:

- `election`        partition leader election strategies (§2): `elect_leader`, `check_election`.
- `assignors`       librdkafka's range and roundrobin assignors, a sticky assignor, and property checks (§5).
- `coordinator`     group coordinator lookup: Java `String.hashCode` and `Utils.abs` (§4).
- `partitioner`     producer partitioners: Kafka's murmur2 and librdkafka's consistent (CRC32) (§6).
- `promises`        the configuration under which Kafka makes each rule a promise.
- `releases`        Apache Kafka releases: features and broker settings, each with its first release.
- `topic_configs`   topic configs as Apache Kafka 3.9 defines and validates them.

The ZooKeeper model, the controller's and group coordinator's state machines and the ISR rules that the
retired reference broker (a ZooKeeper-mode broker in Python) ran on went with it.

Import the submodule you need (`from harness.model.election import elect_leader`); this package
imports none of them eagerly.
"""
