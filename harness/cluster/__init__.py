"""Cluster backends: the ClusterBackend protocol, the containers and process backends,
and the ZooKeeper launcher."""
