"""ZooKeeper-mode Kafka's znodes: paths, JSON encoders and tolerant decoders (`harness.zk.znodes`)."""
