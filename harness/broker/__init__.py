"""The reference broker: a ZooKeeper-mode Kafka broker in Python for real librdkafka clients.

Part 1 (this package today): one broker, ZooKeeper for registration only. `main.main` is the
process entry point (`kafka-chaos broker --config server.properties`, `python -m harness.broker`).
"""
