"""What a consumer's drain check asks the brokers, on connections of its own (`SideChannel`): the partitions of its
topics and their ends.

A broker answers one request per connection at a time (the network processor mutes a connection until its answer is
sent), so a consumer's own Metadata or ListOffsets request waits behind its Fetch long-poll to that broker for up to
`fetch.wait.max.ms`. A consumer that fetches in batches (weak-isr.yaml's: 10 s, a `fetch.min.bytes` never reached)
then could not tell within the check's timeout whether it had read to the end: on Apache Kafka 3.9.2 a 35-s drain
in which every ask timed out left `delivery.lost_write` unknown with 142 writes unseen. An AdminClient opened with the
consumer's connection settings asks on connections no Fetch waits on. Its `list_offsets` came with confluent-kafka
2.3; with an older one `ends` answers None and the member asks its own client, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import confluent_kafka
from confluent_kafka.admin import AdminClient

TopicPartitionKey = tuple[str, int]

_CARRIED = ("bootstrap.servers", "security.protocol", "ssl.", "sasl.", "logger", "client.id", "client.rack")
"""The consumer settings the side channel keeps: where the brokers are and how to reach them (the rest are a
consumer's own, which an admin client refuses or ignores with a warning)."""


class SideChannel:
    """An admin client opened on first use with the connection settings of a consumer (`config`); `isolation`: the
    consumer's `isolation.level`, so an end is what that consumer reads up to (the last stable offset under
    read_committed). Not thread-safe: one member's drain check uses it. `close()` drops the client."""

    def __init__(self, config: Mapping[str, Any], isolation: str) -> None:
        self._config = {k: v for k, v in config.items() if k.startswith(_CARRIED)}
        if "client.id" in self._config:
            self._config["client.id"] = f"{self._config['client.id']}-ends"
        self._isolation = isolation
        self._admin: AdminClient | None = None

    def _client(self) -> AdminClient:
        if self._admin is None:
            self._admin = AdminClient(self._config)
        return self._admin

    def partitions(self, topics: Iterable[str], timeout_s: float) -> set[TopicPartitionKey]:
        """Every partition of `topics` that the cluster's Metadata names (raises KafkaException)."""
        md = self._client().list_topics(timeout=timeout_s)
        return {(t, p) for t in topics if t in md.topics for p in md.topics[t].partitions}

    def ends(self, owned: Iterable[TopicPartitionKey], timeout_s: float) -> dict[TopicPartitionKey, int] | None:
        """The leaders' ends of `owned` (ListOffsets for the latest offset at the consumer's isolation level); None
        when this confluent-kafka has no `list_offsets` (before 2.3). Raises KafkaException, or TimeoutError when a
        leader did not answer within `timeout_s`."""
        if not hasattr(AdminClient, "list_offsets"):
            return None
        from confluent_kafka.admin import OffsetSpec

        level = (confluent_kafka.IsolationLevel.READ_COMMITTED if self._isolation == "read_committed"
                 else confluent_kafka.IsolationLevel.READ_UNCOMMITTED)
        asked = {confluent_kafka.TopicPartition(t, p): OffsetSpec.latest() for t, p in owned}
        if not asked:
            return {}
        futures = self._client().list_offsets(asked, isolation_level=level, request_timeout=timeout_s)
        return {(tp.topic, tp.partition): int(f.result(timeout=timeout_s + 1.0).offset) for tp, f in futures.items()}

    def close(self) -> None:
        self._admin = None  # librdkafka's handle goes with its last reference
