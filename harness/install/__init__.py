"""Installs what the harness runs that is not a Python package: Apache Kafka (from `KAFKA_HOME`, the
Apache release tarball or Maven Central) and the Toxiproxy server (`go install`), into a per-user cache.

Sits beside `cluster/`: it imports nothing of the harness but `errors`.
"""
