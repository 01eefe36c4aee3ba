"""Integration tests against real ZooKeeper servers."""
