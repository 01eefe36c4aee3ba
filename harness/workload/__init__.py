"""Workloads: producers and consumer groups on real confluent-kafka clients, recording every operation."""
