"""Unit tests of the ZooKeeper-mode Kafka znode formats."""
