"""Observers: turn the cluster's state into history events (ZooKeeper, AdminClient, client callbacks)."""
