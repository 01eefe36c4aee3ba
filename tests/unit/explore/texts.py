"""Experiment texts the explore unit tests share: a three-broker ZooKeeper file whose `explore:` block each test
fills in (the last line is the block's key)."""

HEAD = """
name: narrowed
cluster: {brokers: 3}
topics: [{name: orders, partitions: 3, replication_factor: 3}]
workload:
  producers: [{topic: orders, rate: 10}]
  consumers: [{group: billing, topics: [orders]}]
duration: 40s
explore:
"""
