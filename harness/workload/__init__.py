"""Workloads: producers and consumer groups on real clients (confluent-kafka in process; the Java client in worker
processes: `java_client`), recording every operation."""

from harness.workload.common import WorkloadConfigError, WorkloadError
from harness.workload.consumer import ConsumerGroupWorkload
from harness.workload.producer import ProducerWorkload

__all__ = ["ConsumerGroupWorkload", "ProducerWorkload", "WorkloadConfigError", "WorkloadError"]
