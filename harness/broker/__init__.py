"""The reference broker: a ZooKeeper-mode Kafka broker in Python for real librdkafka clients.

A cluster of these behaves as ZooKeeper-mode Kafka: registration, the `/controller` race and
`/controller_epoch`, topics and partition states in ZooKeeper, the controller's LeaderAndIsr /
UpdateMetadata / StopReplica / ControlledShutdown over the inter-broker listener, follower
replication with the Fetch API, ISR and high watermark, acks=all and min.insync.replicas, group
coordinator failover through `__consumer_offsets`, and bug flags (`bugs.py`). `main.main` is the
process entry point (`kafka-chaos broker --config server.properties`, `python -m harness.broker`).
"""
