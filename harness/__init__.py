"""kafka-chaos: a chaos-testing harness for Apache Kafka."""

__version__ = "0.1.0"
